"""``tearline rules [PATH...]``: which library cases catch a consumer that gets each parsing
rule of a framing or payload wrong (``harness.scenario.rules``); exit 1 when a rule has none."""

from __future__ import annotations

import argparse
import sys

from harness.config.issues import ScenarioError
from harness.scenario.rules import RULES, LibraryCase, coverage, render

EXIT_UNCOVERED = 1
EXIT_BAD_INPUT = 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rules = sub.add_parser(
        "rules", help="the parsing rules of each framing and payload, and the cases that catch each"
    )
    rules.add_argument(
        "paths", nargs="*", default=["scenarios"], metavar="PATH", help="the library (scenarios/)"
    )


def rules(args: argparse.Namespace) -> int:
    from harness.link.library import load_cases  # noqa: PLC0415 - not for `tearline --help`

    try:
        cases = load_cases(args.paths, "")
    except ScenarioError as err:
        print(err, file=sys.stderr)
        return EXIT_BAD_INPUT
    library = [
        LibraryCase(c.case_id, c.scenario.link.framing, c.scenario.link.payload) for c in cases
    ]
    found = coverage(RULES, library)
    print(render(found))
    for item in found:
        if item.problem:
            print(f"tearline rules: {item.rule.key}: {item.problem}", file=sys.stderr)
    return EXIT_UNCOVERED if any(item.problem for item in found) else 0
