"""Hypothesis profiles for the whole suite, so that its verdict never depends on chance.

- ``ci`` (the default): derandomized, so every run and every xdist worker draws the same
  examples; no example database, so nothing a past run found changes what this one tries;
  no deadline, because a loaded 2-core machine makes timings noise; and a failing example is
  printed with its reproduction blob.
- ``fuzz``: fresh randomness and 20 times the examples, to hunt bugs. Select it with
  ``TEARLINE_HYPOTHESIS_PROFILE=fuzz`` or ``--hypothesis-profile=fuzz`` (the option wins).

Property tests state their budget as ``@examples(n)`` (``tests/wire.py``): n examples under ci,
scaled with the loaded profile, so a per-test count never caps the fuzz run.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE_VARIABLE = "TEARLINE_HYPOTHESIS_PROFILE"

settings.register_profile(
    "ci", max_examples=100, derandomize=True, database=None, print_blob=True, deadline=None
)
settings.register_profile(
    "fuzz", max_examples=2000, derandomize=False, database=None, print_blob=True, deadline=None
)
# Loaded at import: hypothesis' own pytest plugin applies --hypothesis-profile after this, in
# pytest_configure, and test modules (whose @settings inherit the profile) are imported later.
settings.load_profile(os.environ.get(PROFILE_VARIABLE, "ci"))
