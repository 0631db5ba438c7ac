"""Durations on the command line (``--timeout``, ``--ttl``): ``90``, ``90s``, ``15m``,
``2h``, ``7d`` (CLI.md, "Values on the command line and in files"), at most 100
years (``36500d``, :data:`spi.spec.MAX_TTL`)."""

from __future__ import annotations

import math
import re

from kvctl.errors import CliError
from spi.spec import MAX_TTL
from spi.types import describe

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)\Z")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, option: str) -> float:
    """Seconds of a duration word: a number of seconds, or one with a unit ``s``,
    ``m``, ``h`` or ``d``; anything else is bad input (exit 2)."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise CliError(f"{option} expects a duration such as 90, 90s, 15m, 2h or 7d, got {text!r}")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(seconds) or seconds > MAX_TTL:
        raise CliError(f"{option} is too long: {describe(text)} (at most {describe_seconds(MAX_TTL)}, 100 years)")
    return seconds


def parse_ttl(text: str, option: str = "--ttl") -> int | float:
    """The seconds of a row expiry given as a duration; zero is bad input (exit 2)."""
    seconds = parse_duration(text, option)
    if seconds <= 0:
        raise CliError(f"{option} must be a positive duration such as 90s, 15m, 2h or 7d, got {text!r}")
    return int(seconds) if seconds.is_integer() else seconds


def describe_seconds(seconds: float) -> str:
    """``seconds`` in the largest unit that divides it: ``90s``, ``15m``, ``2h``, ``7d``."""
    for unit in ("d", "h", "m"):
        size = _UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
