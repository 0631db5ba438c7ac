"""The rules of a single-row write, as pure functions of the row stored before, the
operation and its arguments: the row and version written. :class:`spi.table.TableBase`
applies them to every write; the fast paths that skip it (the ordered store's
auto-commit point writes, :mod:`spi.kv.autocommit`, and the PostgreSQL statement
builder, ``providers/postgres/table_writes.py``) take their rules from here too, so a
rule changes in one place. Nothing here reads or writes a store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spi.spec import TableSpec
from spi.types import FieldType, IntegerType, validate_value, values_equal
from spi.validate import full_row


def next_version(old: int | None) -> int:
    """The version a write gives a row (``old``: the live row's version, None when
    there is none): 1 for a new row, else one more."""
    return 1 if old is None else old + 1


def created(spec: TableSpec, key: tuple[Any, ...], values: Mapping[str, Any]) -> dict[str, Any]:
    """The row a write creates where no row lives: ``key``, ``values``, null elsewhere."""
    return full_row(spec, {**dict(zip(spec.primary_key, key)), **values})


def merged(old: Mapping[str, Any] | None, spec: TableSpec, values: dict[str, Any]) -> dict[str, Any]:
    """The row an upsert or a partial update writes: ``values`` over the live row
    ``old`` (None: a new row of them, null elsewhere; ``values`` then hold the key)."""
    return full_row(spec, values) if old is None else {**old, **values}


def incremented(spec: TableSpec, column: str, ftype: FieldType, current: Any, amount: int | float) -> Any:
    """The value an increment of ``column`` by ``amount`` (checked, see
    :func:`spi.validate.check_increment`) writes over ``current`` (null or no row: 0);
    :class:`InvalidFieldError` when it leaves the column's type."""
    return validate_value(ftype, (current or 0) + amount, column, indexed=spec.is_indexed(column))


def increment_bounds(ftype: FieldType, amount: int) -> tuple[int, int]:
    """The values an integer column may hold before an increment by ``amount`` for the
    result to stay in its type's range (what a statement checks in the engine)."""
    impl = ftype.impl
    assert isinstance(impl, IntegerType)
    return impl.min - amount, impl.max - amount


def swaps(current: Any, expected: Any) -> bool:
    """Whether ``compare_and_swap`` swaps: the column holds ``expected`` (None: the
    row is missing or the column null), under the contract's equality."""
    if expected is None:
        return current is None
    return current is not None and values_equal(current, expected)
