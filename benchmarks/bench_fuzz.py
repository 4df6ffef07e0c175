"""Fuzz benchmark of bad input: 10^4 malformed scenario files through ``tearline validate``, and a
bounded sample of valid mutants through ``tearline run``, by the real command in subprocesses.

Run with ``python -m benchmarks.bench_fuzz`` (``--files 500 --run 10`` for a quick look); the
seed is printed, ``--seed`` replays it. The files are made in a temporary folder:

- ``yamlish``: text built from the tokens that matter to YAML and to us (indicators, anchors,
  tags, our keys and values, odd numbers), half of them after a valid minimal scenario;
- ``mutant``: a library file (``scenarios/**/*.yaml``) read as data, 1-3 mutations applied
  (keys deleted, retyped, copied, added; values replaced by huge, negative, NaN, long or deeply
  nested ones; fault kinds swapped), written back as YAML;
- ``edited``: a library file with 1-3 lines deleted, duplicated, cut or inserted;
- ``bytes``: random bytes; and a few of each known trap: deep nesting, billion laughs, merge
  bombs, huge integers, long values, overflowing sweeps, bad UTF-8, files over the size limit
  (one of 20 MB on one line), empty files, files of comments;
- special files: FIFOs, a socket, directories named ``*.yaml``, dangling links, a link loop,
  ``/dev/null``, ``/dev/zero``, a missing path.

``validate`` runs over batches of files (``--batch``), each call with a time limit
(``--timeout``); a batch that times out or prints a traceback is re-run file by file to find
the culprits. Every line on stderr is a message, and must begin ``FILE:LINE: `` with a line of
one of the batch's files, or ``FILE: `` for a file without lines (special, empty, or refused
for its size before it is read). ``run`` takes valid mutants of at most ``--max-cases`` cases,
with ``--deadline-ms`` per case, one call each, with its own time limit.

Printed: exit codes, tracebacks, hangs, messages without file:line, the longest message, the
total output, and wall time, with the load average before and after.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMMAND = [sys.executable, "-m", "harness.cli"]
#: the checkout whose command is run (``--tree``: another one, to compare before and after)
TREE = [ROOT]
MINIMAL = """\
name: minimal
description: The smallest valid scenario.
link: {framing: ndjson, payload: messages}
expect: {verdict: MESSAGE_COMPLETE}
"""
# Tokens of YAML-ish text: indicators, nodes, quotes, documents, odd characters, numbers, keys.
TOKENS = [": ", "- ", "\n", "\n  ", "  ", "[", "]", "{", "}", ", ", "? ", "|", ">", "#"]
TOKENS += ["&a ", "*a", "<<: ", "<<: *a", "!!python/object ", "!x ", "!!binary "]
TOKENS += ["'", '"', '"\\e"', '"\\x00"', "\\", "---\n", "...\n", "%YAML 1.1\n"]
TOKENS += ["\t", "\x00", "\x1b", "\x85", "\u2028", "\ufeff", "é", "@", "`", "%"]
TOKENS += ["1e9", "-1", "0", "0x_", "0b_", "0777", "1:30", ".nan", "-.inf", "1e400", "1.0e+400"]
TOKENS += ["99999999999999999999999", "18446744073709551616", "1_0"]
KEYS = ["name", "description", "link", "framing", "payload", "messages", "count", "texts"]
KEYS += ["size_bytes", "envelope", "records", "tokens", "expect", "verdict", "faults", "kind"]
KEYS += ["at", "offset", "frame", "sweep", "from", "to", "step", "seed", "deadline_ms"]
KEYS += ["faults[0].at.offset", "link.framing", "consumer", "read_bytes", "delay_ms"]
VALUES = ["sse", "ndjson", "grpc", "websocket", "length-prefixed", "messages", "envelope"]
VALUES += ["tokens", "MESSAGE_COMPLETE", "end", "null", "true", "~", "kill", "split", "stall"]
REPLACEMENTS: list[Any] = [None, True, False, -1, 0, 1, 0.5, "", "end", "x" * 10_000, math.nan]
REPLACEMENTS += [math.inf, -math.inf, 1e300, 2**64, 2**63, 10**30, -(2**63), 10**400]
REPLACEMENTS += [{}, [], {"from": 0, "to": 10**30}, {"from": 5, "to": 1}, [[]], [{}]]
REPLACEMENTS += VALUES + KEYS


def library() -> dict[str, Any]:
    """Each library file as data, by its path."""
    files = sorted((ROOT / "scenarios").rglob("*.yaml"))
    return {p.relative_to(ROOT).as_posix(): yaml.safe_load(p.read_text()) for p in files}


# ---- making files


def yamlish(rng: random.Random) -> bytes:
    text = "".join(rng.choice(TOKENS + KEYS + VALUES) for _ in range(rng.randrange(1, 80)))
    return ((MINIMAL if rng.random() < 0.5 else "") + text).encode("utf-8", "surrogatepass")


def _slots(data: Any) -> list[tuple[Any, Any]]:
    found: list[tuple[Any, Any]] = []
    pending = [data]
    while pending:
        node = pending.pop()
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            found.append((node, key))
            if isinstance(value, dict | list):
                pending.append(value)
    return found


def _mutate(rng: random.Random, data: Any, replacement: Callable[[], Any]) -> None:
    slots = _slots(data)
    if not slots:
        return
    parent, key = rng.choice(slots)
    operation = rng.choice(("delete", "retype", "copy", "kind", "unknown", "nest"))
    if operation == "delete":
        del parent[key]
    elif operation == "retype":
        parent[key] = replacement()
    elif operation == "copy" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    elif operation == "kind" and isinstance(parent, dict) and "kind" in parent:
        parent["kind"] = rng.choice(["kill", "split", "stall", "corrupt", "merge", "nope"])
    elif operation == "unknown" and isinstance(parent, dict):
        parent[rng.choice(KEYS)] = replacement()
    elif operation == "nest":
        for _ in range(rng.randrange(1, 80)):
            parent[key] = [parent[key]]


def mutant(rng: random.Random, files: dict[str, Any]) -> bytes:
    data = copy.deepcopy(files[rng.choice(sorted(files))])
    for _ in range(rng.randrange(1, 4)):
        _mutate(rng, data, lambda: rng.choice(REPLACEMENTS))
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1 << 20).encode()


def edited(rng: random.Random, files: dict[str, Any]) -> bytes:
    name = rng.choice(sorted(files))
    lines = (ROOT / name).read_text().splitlines(keepends=True)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(max(1, len(lines)))
        operation = rng.choice(("delete", "duplicate", "insert", "truncate"))
        if operation == "delete" and lines:
            del lines[at]
        elif operation == "duplicate" and lines:
            lines.insert(at, lines[at])
        elif operation == "insert":
            lines.insert(at, rng.choice(TOKENS + KEYS) + rng.choice(TOKENS + VALUES))
        elif operation == "truncate" and lines:
            lines[at] = lines[at][: rng.randrange(len(lines[at]) + 1)]
    return "".join(lines).encode()


def random_bytes(rng: random.Random) -> bytes:
    data = rng.randbytes(rng.randrange(1, 300))
    return (MINIMAL.encode() if rng.random() < 0.5 else b"") + data


def _laughs(rng: random.Random) -> bytes:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return ("lol: {" + ", ".join(levels) + "}\n" + MINIMAL).encode()


def _merge_bomb(rng: random.Random) -> bytes:
    items = "".join(f"- &a{i} {{<<: [*a{i - 1}, *a{i - 1}]}}\n" for i in range(1, 40))
    return ("- &a0 {x: 1}\n" + items).encode()


def _sweep(rng: random.Random) -> bytes:
    axis = rng.choice(
        [
            "seed: {from: 0, to: 18446744073709551615}",
            "seed: {from: 0, to: 1e30}",
            "seed: {from: 0, to: 1000000000000000000000000000000}",
            "seed: [" + ", ".join(map(str, range(2000))) + "]\n  deadline_ms: [1, 2, 3]"
            "\n  link.framing: [sse, ndjson, grpc, websocket, length-prefixed]"
            "\n  link.consumer.read_bytes: [1, 2, 3, 4]",
            "faults[0].at.offset: {from: 0, to: end, step: 1}",
        ]
    )
    faults = "faults: [{kind: kill, at: {offset: 0}}]\n"
    return (MINIMAL + faults + "sweep:\n  " + axis + "\n").encode()


TRAPS: dict[str, Callable[[random.Random], bytes]] = {
    "deep": lambda rng: ("a: " + rng.choice("[{") * rng.randrange(65, 20_000)).encode(),
    "laughs": _laughs,
    "merge-bomb": _merge_bomb,
    "huge-int": lambda rng: (MINIMAL + "seed: " + "9" * rng.randrange(30, 20_000)).encode(),
    "long-value": lambda rng: MINIMAL.replace(
        "ndjson", "x" * rng.randrange(10**5, 9 * 10**5)
    ).encode(),
    "sweep": _sweep,
    "not-utf8": lambda rng: MINIMAL.encode() + b"source: caf\xe9\n",
    "empty": lambda rng: b"",
    "comments": lambda rng: b"# nothing here\n\n",
}


@dataclass
class Corpus:
    """The files made, by category, and which of them have no lines to point at."""

    folder: Path
    category: dict[str, str] = field(default_factory=dict)  # path -> category
    lineless: set[str] = field(default_factory=set)

    def add(self, name: str, data: bytes, category: str) -> str:
        path = self.folder / name
        path.write_bytes(data)
        self.category[str(path)] = category
        if not data or len(data) > max_file_bytes():
            self.lineless.add(str(path))
        return str(path)

    def special(self, path: str, category: str) -> None:
        self.category[path] = category
        self.lineless.add(path)


def max_file_bytes() -> int:
    from harness.scenario.loader import MAX_FILE_BYTES  # noqa: PLC0415 - the harness, lazily

    return MAX_FILE_BYTES


def make_corpus(folder: Path, count: int, rng: random.Random) -> Corpus:
    corpus = Corpus(folder)
    files = library()
    makers: list[tuple[str, Callable[[random.Random], bytes], float]] = [
        ("yamlish", yamlish, 0.30),
        ("mutant", lambda r: mutant(r, files), 0.35),
        ("edited", lambda r: edited(r, files), 0.25),
        ("bytes", random_bytes, 0.05),
    ]
    makers += [(name, maker, 0.05 / len(TRAPS)) for name, maker in TRAPS.items()]
    weights = [weight for _, _, weight in makers]
    for i in range(count):
        name, maker, _ = rng.choices(makers, weights)[0]
        corpus.add(f"{i:05d}-{name}.yaml", maker(rng), name)
    for i in range(3):  # over the size limit, refused unread
        corpus.add(f"big-{i}.yaml", b"a: " + b"x" * (2 << 20) + b"\n", "big")
    corpus.add("big-20mb-one-line.yaml", b"x" * (20 << 20), "big")
    _special_files(corpus)
    return corpus


def _special_files(corpus: Corpus) -> None:
    folder = corpus.folder
    for i in range(5):
        os.mkfifo(folder / f"fifo-{i}.yaml")
        corpus.special(str(folder / f"fifo-{i}.yaml"), "fifo")
        (folder / f"dangling-{i}.yaml").symlink_to(folder / f"gone-{i}.yaml")
        corpus.special(str(folder / f"dangling-{i}.yaml"), "dangling")
    for i in range(2):
        (folder / f"dir-{i}.yaml").mkdir()
        corpus.special(str(folder / f"dir-{i}.yaml"), "directory")
    (folder / "loop-a.yaml").symlink_to(folder / "loop-b.yaml")
    (folder / "loop-b.yaml").symlink_to(folder / "loop-a.yaml")
    corpus.special(str(folder / "loop-a.yaml"), "link-loop")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(folder / "socket.yaml"))  # the socket file stays once it is closed
    listener.close()
    corpus.special(str(folder / "socket.yaml"), "socket")
    for path in ("/dev/null", "/dev/zero", str(folder / "missing.yaml")):
        corpus.special(path, "device" if path.startswith("/dev") else "missing")


# ---- running the command


@dataclass(frozen=True, slots=True)
class Call:
    code: int | None  # None: killed at the time limit
    stdout: str
    stderr: str
    seconds: float


def call(args: Sequence[str], timeout: float) -> Call:
    started = time.monotonic()
    try:
        done = subprocess.run(
            [*COMMAND, *args],
            cwd=TREE[0],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        out = (err.stdout or b"").decode("utf-8", "replace") if err.stdout else ""
        return Call(None, out, "", time.monotonic() - started)
    return Call(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


@dataclass
class Tally:
    """What the calls of one command did; ``keep`` (a folder) gets a copy of each file at
    fault, with what the command printed."""

    calls: Counter[str] = field(default_factory=Counter)  # exit code (or "hang") of each call
    files: Counter[str] = field(default_factory=Counter)  # refused / accepted / hang / traceback
    hangs: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)
    messages: int = 0
    unlocated: list[str] = field(default_factory=list)
    longest: str = ""
    over_400: int = 0
    output_bytes: int = 0
    by_category: Counter[tuple[str, str]] = field(default_factory=Counter)
    keep: Path | None = None
    #: files no message was about: valid, or in a batch that stopped at loading
    accepted: list[str] = field(default_factory=list)

    def culprit(self, file: str, result: Call) -> None:
        if self.keep is None or not Path(file).is_file():
            return
        self.keep.mkdir(parents=True, exist_ok=True)
        name = Path(file).name
        shutil.copyfile(file, self.keep / name)
        (self.keep / f"{name}.stderr").write_text(result.stderr)

    def count_call(self, result: Call) -> None:
        self.calls["hang" if result.code is None else str(result.code)] += 1
        self.output_bytes += len(result.stdout.encode()) + len(result.stderr.encode())


_LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>[1-9][0-9]*): ")


def located(line: str, files: Sequence[str], lineless: set[str]) -> str | None:
    """The file a message is about if it says where (``FILE:LINE: `` with a line >= 1, or
    ``FILE: `` for a file without lines); None if it does not."""
    match = _LOCATED.match(line)
    if match and match["file"] in files:
        return match["file"]
    return next((f for f in files if line.startswith(f + ": ") and f in lineless), None)


def validate_batch(files: Sequence[str], corpus: Corpus, tally: Tally, timeout: float) -> None:
    result = call(["validate", *files], timeout)
    if result.code is None or "Traceback" in result.stderr:
        if len(files) > 1:  # find the files at fault, one call each
            for file in files:
                validate_batch([file], corpus, tally, timeout)
            return
        kind = "hang" if result.code is None else "traceback"
        tally.count_call(result)
        tally.culprit(files[0], result)
        (tally.hangs if kind == "hang" else tally.tracebacks).append(files[0])
        tally.files[kind] += 1
        tally.by_category[(corpus.category[files[0]], kind)] += 1
        return
    tally.count_call(result)
    about: set[str] = set()
    for line in result.stderr.splitlines():
        tally.messages += 1
        tally.longest = max(tally.longest, line, key=len)
        tally.over_400 += len(line) > 400  # errors.MAX_MESSAGE_CHARS, file name aside
        where = located(line, files, corpus.lineless)
        if where is None:
            tally.unlocated.append(line[:300])
        else:
            about.add(where)
    for file in files:
        outcome = "refused" if file in about else "accepted"
        tally.files[outcome] += 1
        tally.by_category[(corpus.category[file], outcome)] += 1
        if outcome == "accepted":
            tally.accepted.append(file)


def batches(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


# ---- valid mutants for `run`


def _mild(rng: random.Random, value: Any) -> Any:
    """A replacement that often keeps a file valid: another number near this one, or one at
    an upper bound (does the machine honour it?), or another word of the same kind."""
    from harness.config import limits  # noqa: PLC0415

    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        bounds: list[float] = [limits.MAX_MESSAGES, limits.MAX_COUNT, limits.MAX_MESSAGE_BYTES]
        bounds += [limits.MAX_DURATION_MS, limits.MAX_RECONNECTS, limits.MAX_PAYLOAD_BYTES]
        choice = rng.random()
        if choice < 0.15:
            return rng.choice(bounds)
        return type(value)(abs(value) * rng.choice([0, 0.5, 2, 3]) + rng.choice([0, 1]))
    framings = ["sse", "ndjson", "grpc", "websocket", "length-prefixed"]
    return rng.choice(framings) if value in framings else value


def valid_mutants(rng: random.Random, count: int, max_cases: int) -> list[tuple[str, bytes]]:
    """Up to ``count`` mutants that load, expand to at most ``max_cases`` cases (without
    ``to: end``, whose count needs the stream), and are written with their cases' deadline."""
    from harness.scenario import ScenarioError, expand, load_text  # noqa: PLC0415

    class Shape:  # stands for the stream: no `to: end` gets this far
        stream_length = 0

        def frame_length(self, index: int) -> int:
            return 0

    files = library()
    found: list[tuple[str, bytes]] = []
    for _ in range(count * 50):
        if len(found) >= count:
            break
        name = rng.choice(sorted(files))
        data = copy.deepcopy(files[name])
        for _ in range(rng.randrange(1, 3)):
            slots = [(p, k) for p, k in _slots(data) if not isinstance(p[k], dict | list)]
            parent, key = rng.choice(slots)
            parent[key] = _mild(rng, parent[key])
        text = yaml.safe_dump(data, sort_keys=False, width=1 << 20)
        if "to: end" in text:
            continue
        try:
            cases = [c for s in load_text(text, name) for c in expand(s, lambda _: Shape())]
        except ScenarioError:
            continue
        if 0 < len(cases) <= max_cases:
            found.append((name, text.encode()))
    return found


def run_sample(
    mutants: Sequence[tuple[str, bytes]], folder: Path, args: argparse.Namespace
) -> tuple[Tally, float]:
    tally = Tally(keep=args.keep)
    started = time.monotonic()
    for i, (_, data) in enumerate(mutants):
        path = folder / f"run-{i:03d}.yaml"
        path.write_bytes(data)
        argv = ["run", str(path), "--jobs", "1", "--deadline-ms", str(args.deadline_ms)]
        result = call(argv, args.run_timeout)
        tally.count_call(result)
        if result.code is None:
            tally.hangs.append(str(path))
        if "Traceback" in result.stderr:
            tally.tracebacks.append(str(path))
        if result.code is None or "Traceback" in result.stderr:
            tally.culprit(str(path), result)
    return tally, time.monotonic() - started


# ---- report


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def report_validate(title: str, tally: Tally, corpus: Corpus, seconds: float) -> None:
    paths = sum(tally.files.values())
    print(f"{title}: {paths} paths in {sum(tally.calls.values())} calls, {seconds:.0f} s")
    print(f"  exit codes of the calls: {dict(sorted(tally.calls.items()))}")
    print(f"  files: {dict(sorted(tally.files.items()))}")
    print(f"  tracebacks: {len(tally.tracebacks)}  hangs: {len(tally.hangs)}")
    print(
        f"  messages: {tally.messages}, without file:line: {len(tally.unlocated)}, "
        f"over 400 chars: {tally.over_400}, longest: {len(tally.longest)} chars"
    )
    print(f"  output: {tally.output_bytes} bytes")
    categories = sorted({category for category, _ in tally.by_category})
    for category in categories:
        row = {o: n for (c, o), n in sorted(tally.by_category.items()) if c == category}
        print(f"    {category:<12} {row}")
    for what, items in (
        ("tracebacks", tally.tracebacks),
        ("hangs", tally.hangs),
        ("without file:line", tally.unlocated),
    ):
        for item in items[:5]:
            print(f"  e.g. {what}: {item}")
    print(f"  longest: {tally.longest[:160]}{'…' if len(tally.longest) > 160 else ''}")


def report_run(tally: Tally, sample: int, seconds: float, args: argparse.Namespace) -> None:
    print(
        f"run: {sample} valid mutants (<= {args.max_cases} cases, --deadline-ms "
        f"{args.deadline_ms:g}, time limit {args.run_timeout:g} s each), {seconds:.0f} s"
    )
    print(f"  exit codes: {dict(sorted(tally.calls.items()))}")
    print(f"  tracebacks: {len(tally.tracebacks)}  hangs: {len(tally.hangs)}")
    print(f"  output: {tally.output_bytes} bytes")
    for path in (tally.hangs + tally.tracebacks)[:5]:
        print(f"  e.g. {path}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=10_000, help="malformed files to make")
    parser.add_argument("--batch", type=int, default=50, help="files per validate call")
    parser.add_argument("--timeout", type=float, default=60.0, help="s per validate call")
    parser.add_argument("--run", type=int, default=120, help="valid mutants to run")
    parser.add_argument("--max-cases", type=int, default=6, help="cases per run mutant, at most")
    parser.add_argument("--deadline-ms", type=float, default=3000.0, help="per case, for run")
    parser.add_argument("--run-timeout", type=float, default=120.0, help="s per run call")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="copy files at fault here")
    parser.add_argument("--tree", type=Path, default=ROOT, help="run the command of this checkout")
    args = parser.parse_args(argv)
    TREE[0] = args.tree
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"seed {seed}; {os.cpu_count()} cores; load average {load_average()}")
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="tearline-fuzz-") as temp:
        folder = Path(temp)
        started = time.monotonic()
        corpus = make_corpus(folder, args.files, rng)
        print(
            f"made {len(corpus.category)} paths in {time.monotonic() - started:.0f} s: "
            f"{dict(sorted(Counter(corpus.category.values()).items()))}"
        )
        tally = Tally(keep=args.keep)
        started = time.monotonic()
        for batch in batches(sorted(corpus.category), args.batch):
            validate_batch(batch, corpus, tally, args.timeout)
        report_validate("validate", tally, corpus, time.monotonic() - started)
        print(f"load average {load_average()}")
        # A batch with one bad file stops at loading: the files that loaded are validated again
        # among themselves, so that they are expanded (sweeps measured, warnings computed).
        again = Tally(keep=args.keep)
        started = time.monotonic()
        for batch in batches(tally.accepted, args.batch):
            validate_batch(batch, corpus, again, args.timeout)
        report_validate(
            "validate again, the files that loaded", again, corpus, time.monotonic() - started
        )
        print(f"load average {load_average()}")
        mutants = valid_mutants(rng, args.run, args.max_cases)
        ran, seconds = run_sample(mutants, folder, args)
        report_run(ran, len(mutants), seconds, args)
    print(f"load average {load_average()}")
    bad = sum(
        len(t.tracebacks) + len(t.hangs) + len(t.unlocated) + t.over_400 for t in (tally, again)
    )
    return 1 if bad or ran.tracebacks or ran.hangs else 0


if __name__ == "__main__":
    sys.exit(main())
