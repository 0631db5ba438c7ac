"""Row and column validation shared by every write and read path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spi.errors import InvalidFieldError
from spi.spec import TableSpec
from spi.types import validate_value


def validate_columns(spec: TableSpec, row: Any, *, what: str = "row") -> dict[str, Any]:
    """Validate the columns present in ``row`` (no completeness check)."""
    if not isinstance(row, Mapping):
        raise InvalidFieldError(f"a {what} must be a mapping of column to value, got {type(row).__name__}")
    out: dict[str, Any] = {}
    checks = spec.checks
    for column, value in row.items():
        check = checks.get(column) if isinstance(column, str) else None
        if check is None:
            spec.type_of(str(column))  # raises the unknown-column error
            raise AssertionError("unreachable")
        out[column] = validate_value(check[0], value, column, in_key=check[1], indexed=check[2])
    return out


def validate_row(spec: TableSpec, row: Any) -> dict[str, Any]:
    """Validate a row for writing: every key column present, every value typed."""
    values = validate_columns(spec, row)
    missing = [k for k in spec.primary_key if k not in values]
    if missing:
        raise InvalidFieldError(
            f"row for {spec.name!r} is missing key column(s) {', '.join(missing)}", column=missing[0]
        )
    return values


def validate_changes(spec: TableSpec, changes: Any, *, what: str = "changes") -> dict[str, Any]:
    """Validate a partial update: no key columns allowed."""
    values = validate_columns(spec, changes, what=what)
    keys = [c for c in values if spec.is_key(c)]
    if keys:
        raise InvalidFieldError(
            f"{what} cannot set key column(s) {', '.join(keys)}; delete and insert the row instead",
            column=keys[0],
        )
    return values


def full_row(spec: TableSpec, values: Mapping[str, Any]) -> dict[str, Any]:
    """Every column of the spec, null where ``values`` has none, in declaration order."""
    return {c: values.get(c) for c in spec.columns}


def check_projection(spec: TableSpec, columns: Iterable[str] | None) -> tuple[str, ...] | None:
    """Validate a ``columns=`` argument: the requested columns plus every key column."""
    if columns is None:
        return None
    if isinstance(columns, str):
        raise InvalidFieldError("columns must be a list of column names, not a string")
    wanted = set(columns)
    for c in wanted:
        spec.type_of(c)
    return tuple(c for c in spec.columns if c in wanted or spec.is_key(c))


def check_limit(limit: Any, *, required: bool = False) -> int | None:
    """Validate a ``limit`` argument (None allowed unless ``required``)."""
    if limit is None and not required:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise InvalidFieldError(f"limit must be a non-negative integer, got {limit!r}")
    return limit
