"""Command-line words: ``col=value`` keys and assignments, and range options → ``spi.Range``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import spi
from kvctl.errors import CliError
from spi.filters import escape_like
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


@dataclass(frozen=True)
class PrefixAsLike:
    """What a ``--prefix`` on a string column probably meant: its last word as a
    string prefix (``--where "iata like 'SE%'"``) instead of a whole value."""

    range: spi.Range | None
    """The other ``--prefix`` words, still an exact key prefix."""
    where: spi.Expr
    """The starts-with condition on the last word's column."""
    hint: str
    """What to use instead, with the options as the user would type them."""


def prefix_as_like(spec: spi.TableSpec, words: Sequence[str], where: str | None) -> PrefixAsLike | None:
    """For ``--prefix`` words whose deepest key column is a string: the same scan with
    that word as a string prefix (None for other columns). ``where`` is the ``--where``
    text given with it, kept in the hint."""
    values = parse_words(spec, words, "--prefix")
    column = spec.primary_key[len(values) - 1]
    if spec.type_of(column) is not spi.FieldType.STRING:
        return None
    text = values.pop(column)
    like = f"{column} like '{escape_like(text).replace(chr(39), chr(39) * 2)}%'"
    full = like if where is None else f"({where}) and {like}"
    kept = [w for w in words if split_word(w, "--prefix")[0] != column]
    options = " ".join([f"--prefix {shell_word(w)}" for w in kept] + [f"--where {shell_word(full)}"])
    hint = (
        f"--prefix {shell_word(f'{column}={text}')} matches {column} values equal to {text!r} only; "
        f"for {column} values starting with {text!r} use {options}"
    )
    return PrefixAsLike(spi.Range.prefix(values) if values else None, spi.col(column).startswith(text), hint)


def shell_word(text: str) -> str:
    """``text`` quoted for a POSIX shell: as is when safe, in double quotes when only
    spaces or single quotes need it (``"iata like 'SE%'"``), else by :func:`shlex.quote`."""
    import shlex

    quoted = shlex.quote(text)
    if quoted == text or any(c in text for c in '"$`\\!'):
        return quoted
    return f'"{text}"'
