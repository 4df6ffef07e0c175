"""Broken consumers: small consumer programs with one realistic bug each (see README.md).

Nothing is imported here: each module runs as its own program (``python -m tests.broken.<bug>``)
and should start fast.
"""
