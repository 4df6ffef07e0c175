"""The link model (pure): a scenario's link as the reference link's configs, and what is
known of its stream before a case runs (the prepared link and its locator)."""
