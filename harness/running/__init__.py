"""Running cases (trio): one case in one nursery, many over worker processes, users' programs."""
