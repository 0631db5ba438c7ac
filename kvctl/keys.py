"""Command-line words: ``col=value`` keys and assignments, and range options → ``spi.Range``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import spi
from kvctl.errors import CliError
from spi.textvalues import parse_word


def split_word(word: str, what: str) -> tuple[str, str]:
    """Split ``col=value`` (the value may contain ``=``)."""
    column, sep, text = word.partition("=")
    if not sep or not column:
        raise CliError(f"{what}: expected col=value, got {word!r}")
    return column, text


def parse_words(spec: spi.TableSpec, words: Sequence[str], what: str) -> dict[str, Any]:
    """``col=value`` words → typed values (each column at most once)."""
    values: dict[str, Any] = {}
    for word in words:
        column, text = split_word(word, what)
        if column in values:
            raise CliError(f"{what}: column {column!r} is given twice")
        values[column] = parse_word(spec, column, text)
    return values


def parse_key(spec: spi.TableSpec, words: Sequence[str]) -> dict[str, Any]:
    """A complete primary key from ``col=value`` words, in any order."""
    key = parse_words(spec, words, "key")
    extra = [c for c in key if not spec.is_key(c)]
    if extra:
        raise CliError(f"key: {extra[0]!r} is not a key column of {spec.name!r} (key: {', '.join(spec.primary_key)})")
    missing = [c for c in spec.primary_key if c not in key]
    if missing:
        raise CliError(
            f"key: missing {', '.join(f'{c}=...' for c in missing)} (the key of {spec.name!r} is "
            f"{', '.join(spec.primary_key)})"
        )
    return key


def parse_assignments(spec: spi.TableSpec, words: Sequence[str], what: str = "--set") -> dict[str, Any]:
    """``--set col=value`` words → changes (key columns are rejected by the SPI)."""
    return parse_words(spec, words, what)


def _bound(spec: spi.TableSpec, words: Sequence[str] | None, option: str) -> dict[str, Any] | None:
    if not words:
        return None
    bound = parse_words(spec, words, option)
    for column in bound:
        if not spec.is_key(column):
            raise CliError(
                f"{option}: {column!r} is not a key column of {spec.name!r}; ranges are over the key "
                f"({', '.join(spec.primary_key)}); use --where for other columns"
            )
    return bound


def build_range(
    spec: spi.TableSpec,
    *,
    prefix: Sequence[str] | None = None,
    ge: Sequence[str] | None = None,
    gt: Sequence[str] | None = None,
    le: Sequence[str] | None = None,
    lt: Sequence[str] | None = None,
) -> spi.Range | None:
    """The key range the options describe (None: the whole table).

    Repeated words of one option build one key prefix (``--ge region=eu --ge id=10``).
    """
    if ge and gt:
        raise CliError("--ge and --gt cannot be used together")
    if le and lt:
        raise CliError("--le and --lt cannot be used together")
    exact = _bound(spec, prefix, "--prefix")
    if exact is not None and (ge or gt or le or lt):
        raise CliError("--prefix cannot be combined with --ge/--gt/--le/--lt; give the prefix in the bounds")
    if exact is not None:
        rng = spi.Range.prefix(exact)
    else:
        start = _bound(spec, ge, "--ge") or _bound(spec, gt, "--gt")
        end = _bound(spec, le, "--le") or _bound(spec, lt, "--lt")
        if start is None and end is None:
            return None
        rng = spi.Range(start, end, start_inclusive=not gt, end_inclusive=bool(le))
    rng.resolve(spec)  # gaps and types are reported now, before anything runs
    return rng
