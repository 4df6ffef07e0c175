"""The tearline pytest fixtures, as a team's conftest enables them (``pytest_plugins`` in a
root conftest; imported here, which registers them the same way for this folder)."""

from harness.consumers.fixtures import tearline_proxy, tearline_scenarios

__all__ = ["tearline_proxy", "tearline_scenarios"]
