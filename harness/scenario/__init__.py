"""Scenario files: the model, safe loading with complete validation, sweeps, and JSON Schema.

    scenarios = load_paths(["scenarios/"])          # ScenarioError lists every mistake
    for scenario in scenarios:
        for case in expand(scenario, prepared_link):  # one Case per sweep combination
            run(case.scenario, seed=case.seed)

Modules: ``model`` (the dataclasses), ``sweep`` (the sweep section), ``cases`` (expansion),
``sources`` (files on disk), ``loader`` (one file), ``files`` (many, each on its own),
``settings`` (``tearline.yaml``), ``schema``; the format's versions and deprecations:
``formats`` (the table), ``versions`` (the machinery), ``views``, ``edits``, ``renames``,
``heartbeat_text``, ``upgrade`` (``tearline upgrade``). The generic validator, YAML nodes and
key paths are ``harness.config``; the fault kinds and their rules ``harness.faults``. The
format is documented in ``docs/scenario-format.md``.
"""

from harness.config.issues import ScenarioError, SchemaIssue
from harness.faults.registry import FaultRegistry
from harness.scenario.cases import (
    MAX_RUN_CASES,
    Case,
    RunLimitError,
    expand,
    expand_all,
    stable_seed,
)
from harness.scenario.files import Library, load_library, load_paths, read_paths
from harness.scenario.formats import CURRENT_FORMAT, FORMAT_RULES
from harness.scenario.loader import (
    FileLoad,
    ScenarioFormatWarning,
    load_file,
    load_text,
    read_file,
    read_text,
)
from harness.scenario.model import (
    VERDICTS,
    ConsumerConfig,
    CountRange,
    EnvelopeConfig,
    Expect,
    FramingConfig,
    Link,
    MessagesConfig,
    Origin,
    ProducerConfig,
    Scenario,
    Span,
    SweepAxis,
    TokensConfig,
)
from harness.scenario.schema import json_schema
from harness.scenario.sweep import MAX_CASES

__all__ = [
    "CURRENT_FORMAT",
    "FORMAT_RULES",
    "MAX_CASES",
    "MAX_RUN_CASES",
    "VERDICTS",
    "Case",
    "ConsumerConfig",
    "CountRange",
    "EnvelopeConfig",
    "Expect",
    "FaultRegistry",
    "FileLoad",
    "FramingConfig",
    "Library",
    "Link",
    "MessagesConfig",
    "Origin",
    "ProducerConfig",
    "RunLimitError",
    "Scenario",
    "ScenarioError",
    "ScenarioFormatWarning",
    "SchemaIssue",
    "Span",
    "SweepAxis",
    "TokensConfig",
    "expand",
    "expand_all",
    "json_schema",
    "load_file",
    "load_library",
    "load_paths",
    "load_text",
    "read_file",
    "read_paths",
    "read_text",
    "stable_seed",
]
