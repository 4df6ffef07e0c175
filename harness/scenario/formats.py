"""The table of the scenario format: its versions and its deprecations (machinery:
``harness.scenario.versions``). Every change here is announced in ``CHANGELOG.md`` and listed
in ``docs/scenario-format.md#format-versions``; ``tests/scenario/test_formats.py`` checks both.

To deprecate a key or a value, add one entry to ``DEPRECATIONS``: a ``RenamedKey`` or a
``RenamedValue`` (``harness.scenario.renames``), or a class of its own with a ``find`` when the
new form depends on the context (``heartbeat_text``). Add its old forms to a file of
``tests/compat/deprecated/``, with the file ``tearline upgrade`` must make of it.

To remove a deprecated form, or give a key a new meaning, add a version to ``FORMATS`` and set
``up_to`` of the entries that keep reading the older files to the version before it.
"""

from __future__ import annotations

from harness.scenario.heartbeat_text import HeartbeatTextAlone
from harness.scenario.renames import RemovedKey
from harness.scenario.versions import Deprecation, FormatRules, FormatVersion

#: Every version this tearline reads, oldest first; the last is the current one.
FORMATS: tuple[FormatVersion, ...] = (
    FormatVersion(1, "2026-11-29", "the format of the first library"),
)
#: Every deprecated form still read, oldest first.
DEPRECATIONS: tuple[Deprecation, ...] = (
    HeartbeatTextAlone(),
    RemovedKey(
        "grading-needs",
        "2026-12-02",
        where="expect.grading",
        key="needs",
        why="what a case needs is derived from its faults and settings",
    ),
)
FORMAT_RULES = FormatRules(FORMATS, DEPRECATIONS)
#: The version written today, and the one a file that names none is read in.
CURRENT_FORMAT: int = FORMAT_RULES.current
