"""Compare where faults landed (name, connection, direction, offset) case by case in two runs'
results.json: a change of the locator must not move a fault on the reference link."""

from __future__ import annotations

import json
import sys
from typing import Any

#: faults recorded once per read: how many records there are depends on how reads fell
PER_READ = frozenset({"latency", "throttle", "slicer"})


def placements(path: str) -> dict[str, list[tuple[Any, ...]]]:
    with open(path) as handle:
        cases = json.load(handle)["cases"]
    return {
        case["id"]: sorted(
            (f["name"], f["connection"], f["direction"], f["offset"])
            for f in case["timeline"]["faults"]
            if f["name"] not in PER_READ
        )
        for case in cases
    }


def main(old_path: str, new_path: str) -> int:
    old, new = placements(old_path), placements(new_path)
    moved = [case for case in sorted(old.keys() & new.keys()) if old[case] != new[case]]
    for case in moved[:40]:
        print(f"{case}:\n  {old[case]}\n  {new[case]}")
    print(f"{len(moved)} of {len(old.keys() & new.keys())} cases with faults placed differently")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
