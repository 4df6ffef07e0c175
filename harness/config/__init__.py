"""Generic machinery of the frozen config dataclasses (pure): value constraints attached to types,
the YAML keys of a dataclass, field documentation, and checking a built object against its
constraints. The scenario model and the fault configs are written with it."""
