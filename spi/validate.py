"""Row and column validation shared by every write and read path."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from spi.errors import InvalidFieldError
from spi.spec import TableSpec
from spi.types import FieldType, describe, size_limit, validate_value


def validate_columns(spec: TableSpec, row: Any, *, what: str = "row") -> dict[str, Any]:
    """Validate the columns present in ``row`` (no completeness check)."""
    if type(row) is not dict and not isinstance(row, Mapping):
        raise InvalidFieldError(f"a {what} must be a mapping of column to value, got {type(row).__name__}")
    validators = spec.validators
    if not row.keys() <= validators.keys():
        for column in row:
            if not isinstance(column, str) or column not in validators:
                spec.type_of(str(column))  # raises the unknown-column error
    return {column: validators[column](value) for column, value in row.items()}


def check_increment(spec: TableSpec, column: str, amount: Any) -> tuple[FieldType, int | float]:
    """The type of ``column`` and the ``amount`` of an increment of it, checked: a
    numeric non-key column and a number it can add (an integer for an integer
    column; for a double one, a value a double holds)."""
    ftype = spec.type_of(column)
    integer = ftype.impl.integer
    if not ftype.impl.incrementable or spec.is_key(column):
        raise InvalidFieldError(
            f"increment needs an int, long or double non-key column; {column!r} is "
            f"{'a key column' if spec.is_key(column) else ftype}",
            column=column,
        )
    if integer and type(amount) is int:  # the usual case (not a bool)
        return ftype, amount
    if isinstance(amount, bool) or not isinstance(amount, (int, float)):
        raise InvalidFieldError(f"increment amount must be a number, got {amount!r}", column=column)
    if integer:
        if isinstance(amount, int):
            return ftype, amount
        raise InvalidFieldError(
            f"increment amount for {ftype} column {column!r} must be an integer, got {amount!r}",
            column=column,
        )
    amount = validate_value(ftype, amount, column)  # an int no double holds is out of range (not an OverflowError)
    return ftype, amount


def validate_row(spec: TableSpec, row: Any) -> dict[str, Any]:
    """Validate a row for writing: every key column present, every value typed."""
    try:
        return (spec._row_check or _full_row_validator(spec))(row)
    except KeyError:
        pass  # not a dict of exactly the spec's columns: the general path explains
    values = validate_columns(spec, row)
    for k in spec.primary_key:
        if k not in values:
            missing = [c for c in spec.primary_key if c not in values]
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


def checked_version(version: int | None) -> int | None:
    """A ``version=`` condition as given; :class:`InvalidFieldError` unless it is None
    or a positive integer."""
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 1):
        raise InvalidFieldError(f"version must be a positive integer, got {version!r}")
    return version


def full_row(spec: TableSpec, values: dict[str, Any]) -> dict[str, Any]:
    """Every column of the spec, null where ``values`` has none, in declaration order
    (``values`` itself when it already is such a row)."""
    columns = spec.columns
    if len(values) == len(columns) and tuple(values) == columns:
        return values
    return {c: values.get(c) for c in columns}


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


def check_batch_size(batch_size: Any) -> int:
    """Validate a ``batch_size`` argument: a positive integer up to :data:`sys.maxsize`."""
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or not 1 <= batch_size <= sys.maxsize:
        raise InvalidFieldError(f"batch_size must be an integer from 1 to {sys.maxsize}, got {describe(batch_size)}")
    return batch_size


def value_checks(spec: TableSpec, namespace: dict[str, Any], indent: str) -> list[str]:
    """Source lines reading every column of a dict ``row`` into ``v0``, ``v1``, ...
    (declaration order), each checked as :func:`validate_columns` would check it.

    Each value gets its column's common-case check inline (no call per value); any
    other value goes to the column's full checker, so results and errors are exactly
    those of :func:`validate_columns`. A missing column raises KeyError. Fills
    ``namespace`` with what the lines refer to (``n0``... names, ``c0``... checkers);
    the source holds only generated names and numbers, never a column name.
    """
    lines = []
    for i, name in enumerate(spec.columns):
        ftype = spec.type_of(name)
        namespace[f"c{i}"] = spec.validators[name]
        namespace[f"n{i}"] = name
        fast = ftype.impl.fast_check(size_limit(spec.is_key(name), spec.is_indexed(name)))
        if not spec.is_key(name):
            fast = "v is None" if fast is None else f"v is None or ({fast})"
        lines.append(f"{indent}v = row[n{i}]")
        lines.append(f"{indent}v{i} = v if {fast} else c{i}(v)" if fast else f"{indent}v{i} = c{i}(v)")
    return lines


def _full_row_validator(spec: TableSpec) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A validator generated for rows that carry every column of ``spec`` (bulk rows
    nearly always do): :func:`value_checks`, returning the row in column order.
    Raises KeyError for anything but a dict of every column."""
    n = len(spec.columns)
    namespace: dict[str, Any] = {}
    lines = ["def validate(row):", f"    if type(row) is not dict or len(row) != {n}:", "        raise KeyError"]
    lines += value_checks(spec, namespace, "    ")
    lines.append("    return {" + ", ".join(f"n{i}: v{i}" for i in range(n)) + "}")
    exec("\n".join(lines), namespace)
    validate: Callable[[dict[str, Any]], dict[str, Any]] = namespace["validate"]
    object.__setattr__(spec, "_row_check", validate)  # cached on the (immutable) spec
    return validate
