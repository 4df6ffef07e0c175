"""Scenario files on disk: which files a path names, and their bytes, read safely.

Only regular files are read, stat'ed before they are opened, opened without blocking, and no
more than ``MAX_FILE_BYTES`` of them; a directory is searched for ``*.yaml`` and ``*.yml`` files
(``tearline.yaml``, the folder's settings, is not a scenario file). Every problem is a
``SchemaIssue`` naming the file, never an exception.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.config.issues import SchemaIssue, clip_repr

#: The settings file of a folder of scenario files (``harness.scenario.settings``).
SETTINGS_NAMES = ("tearline.yaml", "tearline.yml")


def source(path: Path) -> tuple[bytes | None, list[SchemaIssue]]:
    """The bytes of a scenario file, checked to be UTF-8 text; or the issue saying why not."""
    file = str(path)
    data, problem = read_bounded(path)
    if data is None:
        return None, [SchemaIssue(file, 0, "", problem or "cannot read")]
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        return None, [
            SchemaIssue(file, line, "", f"not UTF-8 text (bad byte at offset {err.start})")
        ]
    return data, []


#: Largest scenario file read, refused with its size before it is opened (the library's largest
#: is 4 KB; a megabyte of YAML takes a few seconds to check).
MAX_FILE_BYTES = 1 << 20
_SUFFIXES = (".yaml", ".yml")
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def mode_of(path: Path) -> tuple[int, str | None]:
    """``st_mode`` of ``path`` (links followed), or why there is none: missing, a dangling
    link, a link loop, a folder we may not enter."""
    try:
        return os.stat(path).st_mode, None
    except FileNotFoundError:
        if os.path.islink(path):
            return 0, f"a dangling symbolic link (to {clip_repr(os.readlink(path), 80)})"
        return 0, "no such file or directory"
    except OSError as err:
        return 0, f"cannot read: {err.strerror or err}"


def _special(mode: int) -> str | None:
    """Why a file of this mode is not read (only regular files are: a FIFO or a device would
    block or never end)."""
    if stat.S_ISREG(mode):
        return None
    kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
    return f"{kind}, not a scenario file: not read"


def _too_big(size: int) -> str | None:
    if size <= MAX_FILE_BYTES:
        return None
    return f"{size} bytes: too big for a scenario file (at most {MAX_FILE_BYTES}); not read"


def read_bounded(path: Path) -> tuple[bytes | None, str | None]:
    """The bytes of a regular file of at most ``MAX_FILE_BYTES``, or why not. The file is
    stat'ed before it is opened, opened without blocking (a FIFO swapped in after the stat
    cannot hang us), checked again once open, and read no further than the limit."""
    mode, problem = mode_of(path)
    problem = problem or _special(mode)
    if problem is not None:
        return None, problem
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        return None, f"cannot read: {err.strerror or err}"
    try:
        info = os.fstat(fd)
        problem = _special(info.st_mode) or _too_big(info.st_size)
        data = b"" if problem is not None else _read_fd(fd, MAX_FILE_BYTES + 1)
    except OSError as err:
        return None, f"cannot read: {err.strerror or err}"
    finally:
        os.close(fd)
    if problem is not None:
        return None, problem
    if len(data) > MAX_FILE_BYTES:  # it grew since the stat
        return None, f"over {MAX_FILE_BYTES} bytes: too big for a scenario file; not read"
    if not data:
        return None, "empty file (0 bytes): expected a scenario or a list of scenarios"
    return data, None


def _read_fd(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(1 << 16, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def scenario_files(root: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The ``*.yaml`` and ``*.yml`` entries under ``root``, sorted, whatever they are (a FIFO
    or a dangling link named like a scenario is reported when read, not skipped), and the
    folders that could not be listed. Links to folders are followed, each folder once."""
    found: list[Path] = []
    unreadable: list[tuple[Path, str]] = []
    seen: set[tuple[int, int]] = set()

    def refused(err: OSError) -> None:
        unreadable.append((Path(err.filename), f"cannot list: {err.strerror or err}"))

    for folder, subfolders, names in os.walk(root, onerror=refused, followlinks=True):
        try:
            info = os.stat(folder)
        except OSError:
            subfolders.clear()
            continue
        if (info.st_dev, info.st_ino) in seen:  # a link back up the tree: walked already
            subfolders.clear()
            continue
        seen.add((info.st_dev, info.st_ino))
        found += [
            Path(folder, name)
            for name in names
            if name.endswith(_SUFFIXES) and name not in SETTINGS_NAMES
        ]
    return sorted(found), unreadable
