"""Rows decoded straight from their stored form: one struct type per table layout.

A stored row is msgpack ``[head, value...]`` in layout order (:mod:`spi.kv.layout`),
``head`` the version or ``[version, expires]``. Decoding it into a struct whose
fields are ``head, c0, c1...`` makes the row in the decoder's C loop: no dict and no
second object per row (a full scan runs about three times as fast). The struct
is a :class:`spi.Row` (registered with it) that answers from its fields: ``row[c]``
reads one field, :attr:`~StoredRow.mapping` builds the dict when asked. Timestamps
stay microseconds in the struct and become datetimes when read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import msgspec

from spi.codec import from_micros
from spi.codegen import column_closure, dict_display
from spi.row import Row, RowMeta, RowMethods


class StoredRow(RowMethods, msgspec.Struct, metaclass=RowMeta, array_like=True, gc=False, eq=False):
    """The base of the per-layout row types (:func:`row_type`): ``head`` is the
    stored version or ``[version, expires]``; the subclass adds one field per column.

    Like :class:`~spi.row.Row` it holds only plain data, so it stays outside the
    garbage collector."""

    head: Any

    columns: ClassVar[tuple[str, ...]]
    """The column names, in layout order."""
    fields: ClassVar[dict[str, str]]
    """Column name → the struct field holding its value."""

    @property
    def version(self) -> int:
        """The row's version."""
        head = self.head
        return head if head.__class__ is int else head[0]  # type: ignore[no-any-return]

    @property
    def expires(self) -> int | None:
        """When the row expires, in microseconds since the epoch (None: never)."""
        head = self.head
        return None if head.__class__ is int else head[1]  # type: ignore[no-any-return]

    def __contains__(self, column: object) -> bool:
        return column in self.fields

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` of the values (:attr:`mapping` is one already)."""
        return self.mapping  # type: ignore[return-value]

    def __reduce__(self) -> tuple[Any, ...]:
        # The struct type is made at run time, so a pickle holds the plain Row it equals.
        return Row, (self.mapping, self.version, self.expires)


@functools.lru_cache(maxsize=256)
def row_type(columns: tuple[str, ...], timestamps: frozenset[str]) -> type[StoredRow]:
    """The row struct of a layout of ``columns`` (those in ``timestamps`` stored as
    microseconds). Values stored beyond the last column are ignored; columns added
    after a row was written read as null."""
    n = len(columns)
    stamps = frozenset(i for i, c in enumerate(columns) if c in timestamps)

    def value(i: int) -> str:
        return f"(None if r.c{i} is None else from_micros(r.c{i}))" if i in stamps else f"r.c{i}"

    build: Callable[[StoredRow], dict[str, Any]] = column_closure(
        n, f"def build(r):\n    return {dict_display(n, value)}\n", {"from_micros": from_micros}
    )(*columns)
    fields = [f"c{i}" for i in range(n)]
    field_of = dict(zip(columns, fields, strict=True))
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__annotations__": dict.fromkeys(fields, Any),
        **dict.fromkeys(fields),  # each defaults to null: a column added after the row was written
        "columns": columns,
        "fields": field_of,
        "__getitem__": _item_getter(field_of, timestamps),
        "mapping": property(build, doc="The values, as a new dict (made when asked)."),
    }
    # A class statement's way (defstruct refuses bases with mixins of their own).
    return RowMeta("StoredRow", (StoredRow,), namespace)  # type: ignore[return-value]


Row.register(StoredRow)  # type: ignore[type-abstract]  # each row type adds __getitem__


def _item_getter(field_of: dict[str, str], timestamps: frozenset[str]) -> Callable[[StoredRow, str], Any]:
    """``row[column]`` for a row type (a closure: a quarter faster than reading the
    class's attributes)."""
    if not timestamps:

        def item(row: StoredRow, column: str) -> Any:
            return getattr(row, field_of[column])

        return item

    def item_or_time(row: StoredRow, column: str) -> Any:
        value = getattr(row, field_of[column])
        return from_micros(value) if value is not None and column in timestamps else value

    return item_or_time
