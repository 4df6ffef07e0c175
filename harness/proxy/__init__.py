"""The fault proxy (trio): listeners, connections, the two directions of each, and how a
declared read boundary is made observable."""
