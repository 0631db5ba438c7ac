"""Argument checks of the reference model: rows, changes, keys, ranges, limits.

Values are validated with :func:`spi.types.validate_value` and key shapes with
:mod:`spi.keys`; everything else (which column may appear where, what a limit or a
version may be) is checked here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spi.errors import InvalidFieldError
from spi.keys import Range, normalize_key, normalize_prefix
from spi.spec import TableSpec
from spi.types import validate_value

LOAD_MODES = ("upsert", "insert", "replace")


def check_column(spec: TableSpec, column: Any) -> None:
    """Raise :class:`InvalidFieldError` unless ``column`` is a declared column."""
    if not isinstance(column, str) or not spec.has_column(column):
        raise InvalidFieldError(f"table {spec.name!r} has no column {column!r}", column=str(column))


def check_value(spec: TableSpec, column: str, value: Any) -> Any:
    """``value`` validated for ``column`` of ``spec``, in canonical form."""
    return validate_value(
        spec.type_of(column), value, column, in_key=spec.is_key(column), indexed=spec.is_indexed(column)
    )


def check_columns(spec: TableSpec, row: Any, what: str) -> dict[str, Any]:
    """The columns of ``row`` validated; every column name is checked before any value."""
    if not isinstance(row, Mapping):
        raise InvalidFieldError(f"a {what} must be a mapping of column to value, got {type(row).__name__}")
    for column in row:
        check_column(spec, column)
    return {column: check_value(spec, column, value) for column, value in row.items()}


def check_row(spec: TableSpec, row: Any) -> dict[str, Any]:
    """A row to write: validated values, every key column present."""
    values = check_columns(spec, row, "row")
    missing = [k for k in spec.primary_key if k not in values]
    if missing:
        raise InvalidFieldError(f"row is missing key column(s) {', '.join(missing)}", column=missing[0])
    return values


def check_changes(spec: TableSpec, changes: Any, what: str = "changes") -> dict[str, Any]:
    """A partial update: validated values, no key column."""
    values = check_columns(spec, changes, what)
    keys = [c for c in values if spec.is_key(c)]
    if keys:
        raise InvalidFieldError(f"{what} cannot set key column(s) {', '.join(keys)}", column=keys[0])
    return values


def check_key(spec: TableSpec, key: Any) -> tuple[Any, ...]:
    """A complete key as a tuple in key order."""
    return normalize_key(spec, key)


def full_row(spec: TableSpec, values: Mapping[str, Any]) -> dict[str, Any]:
    """Every column of ``spec``, null where ``values`` has none."""
    return {c: values.get(c) for c in spec.columns}


def key_values(spec: TableSpec, key: tuple[Any, ...]) -> dict[str, Any]:
    """A key tuple as a mapping key column → value."""
    return dict(zip(spec.primary_key, key))


@dataclass(frozen=True)
class Bounds:
    """A checked key range: prefixes compared with a row's first key values (None: open)."""

    start: tuple[Any, ...] | None = None
    start_inclusive: bool = True
    end: tuple[Any, ...] | None = None
    end_inclusive: bool = False


def check_range(spec: TableSpec, rng: Range | None) -> Bounds:
    """The bounds of an optional range (None: the whole table); an empty prefix is open."""
    if rng is None:
        return Bounds()
    if rng.full_key and rng.start is not None:
        key = check_key(spec, rng.start)
        return Bounds(key, True, key, True)
    start = None if rng.start is None else normalize_prefix(spec, rng.start, what="range start")
    end = None if rng.end is None else normalize_prefix(spec, rng.end, what="range end")
    return Bounds(start or None, rng.start_inclusive, end or None, rng.end_inclusive)


def check_order_by(spec: TableSpec, order_by: str | None) -> str | None:
    """The column a scan is ordered by before the key (None: key order only)."""
    if order_by is None:
        return None
    check_column(spec, order_by)
    if order_by == spec.primary_key[0]:
        return None  # ordering by the first key column is key order
    if not (spec.is_key(order_by) or spec.is_indexed(order_by)):
        raise InvalidFieldError(f"cannot order by {order_by!r}: add an index on it", column=order_by)
    return order_by


def is_count(value: Any, *, least: int) -> bool:
    """True for a real ``int`` (not a bool) of at least ``least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def check_limit(limit: Any, *, required: bool = False) -> int | None:
    """A ``limit``: None (unless ``required``) or a non-negative integer."""
    if limit is None and not required:
        return None
    if not is_count(limit, least=0):
        raise InvalidFieldError(f"limit must be a non-negative integer, got {limit!r}")
    return int(limit)


def check_version(version: Any) -> int | None:
    """A ``version=`` argument: None or a positive integer."""
    if version is not None and not is_count(version, least=1):
        raise InvalidFieldError(f"version must be a positive integer, got {version!r}")
    return version


def check_load(mode: Any, batch_size: Any) -> None:
    """The arguments of ``load`` other than the rows."""
    if mode not in LOAD_MODES:
        raise InvalidFieldError(f"load mode must be one of {', '.join(LOAD_MODES)}, got {mode!r}")
    if not is_count(batch_size, least=1):
        raise InvalidFieldError(f"batch_size must be a positive integer, got {batch_size!r}")
