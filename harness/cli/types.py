"""argparse value types for numbers with bounds: a bad value is one line and exit 2, as argparse
reports its own errors, never a traceback or a run that cannot finish."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path

_UPSTREAM = re.compile(r"(https://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):([0-9]{1,5})")


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value

    return parse


def bounded_float(low: float, high: float) -> Callable[[str], float]:
    """A number in ``(low, high]``: durations must be positive."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (math.isfinite(value) and low < value <= high):
            raise argparse.ArgumentTypeError(f"must be > {low:g} and <= {high:g}, got {text}")
        return value

    return parse


def upstream(text: str) -> str:
    """``HOST:PORT`` or ``https://HOST:PORT`` (IPv6 in brackets), as a scenario's upstream."""
    match = _UPSTREAM.fullmatch(text)
    if match is None or int(match[3]) > 65535:  # the largest port
        raise argparse.ArgumentTypeError(f"expected HOST:PORT or https://HOST:PORT, got {text!r}")
    return text


def readable_file(text: str) -> str:
    """A file that exists (a CA file), so a typo fails the command, not every case."""
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    return text
