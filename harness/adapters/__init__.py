"""Adapters: real client libraries wrapped as consumer functions (the ``clients`` extra). Each
module drives its library's own I/O; the table of them is ``harness.consumers.catalogue``."""
