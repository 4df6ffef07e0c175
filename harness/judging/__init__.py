"""Judging (pure): the wire timeline, the judge, and the results model."""
