"""Scenario files: the model, safe loading with complete validation, sweeps, and JSON Schema.

    scenarios = load_paths(["scenarios/"])          # ScenarioError lists every mistake
    for scenario in scenarios:
        for case in expand(scenario, prepared_link):  # one Case per sweep combination
            run(case.scenario, seed=case.seed)

Modules: ``model`` (the dataclasses), ``loader`` (files to scenarios), ``sweep`` (the sweep
section), ``cases`` (expansion), ``selection`` (``-k``), ``schema`` (JSON Schema). What they
are built on lives below them: the validator, YAML nodes, key paths and issues in
``harness.config``, the fault kinds and their rules in ``harness.faults``. The format is
documented in ``docs/scenario-format.md``.
"""

from harness.config.issues import ScenarioError, SchemaIssue
from harness.faults.registry import FaultRegistry
from harness.scenario.cases import MAX_RUN_CASES, Case, expand, expand_all, stable_seed
from harness.scenario.loader import load_file, load_paths, load_text
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
    "MAX_CASES",
    "MAX_RUN_CASES",
    "VERDICTS",
    "Case",
    "ConsumerConfig",
    "CountRange",
    "EnvelopeConfig",
    "Expect",
    "FaultRegistry",
    "FramingConfig",
    "Link",
    "MessagesConfig",
    "Origin",
    "ProducerConfig",
    "Scenario",
    "ScenarioError",
    "SchemaIssue",
    "Span",
    "SweepAxis",
    "TokensConfig",
    "expand",
    "expand_all",
    "json_schema",
    "load_file",
    "load_paths",
    "load_text",
    "stable_seed",
]
