"""``swap_rows`` of a change-fed table in the ordered-store engine (SPI.md, "Overwrites").

Two tables without a feed swap rows by trading table ids, which costs nothing. A
change-fed table cannot: its events name it by its table id (the row keys in the
feed start with it), so its key space must stay its own. :func:`exchange_rows`
rewrites both tables instead, in the one transaction: a merge of their rows in key
order (read straight from the store session, so the writes buffered meanwhile do not
disturb it) replaces each table's rows by the other's through the tables' ordinary
write primitives (:meth:`KvTable._put` and :meth:`KvTable._remove`). A change-fed
side therefore records exactly the events those writes record, under the
transaction's one revision, and its index entries, expiry entries and row counter
follow as for any write. Per key, in key order, for each change-fed side: an
``"expire"`` event when its old row had expired (a write that meets an expired row
sweeps it first), then a ``"put"`` of the other side's live row (``created`` when no
live row was there; unchanged rows included), or a ``"delete"`` of its live row when
the other side has none. The rows of the first table's events come before the
second's for the same key.

The commit is one atomic store batch, so the rows of both tables are in it; what is
held per row is the encoded entries the batch needs and the events.
"""

from __future__ import annotations

from collections.abc import Iterator

from spi.codec import prefix_successor
from spi.keys import key_of
from spi.kv.buffer import WriteBuffer
from spi.kv.layout import Layout
from spi.kv.table import KvTable
from spi.primitives import Stored

_Entry = tuple[bytes, bytes]
"""A stored row: its encoded key (without the table's prefix) and its stored value."""


def exchange_rows(buffer: WriteBuffer, first: Layout, second: Layout) -> None:
    """Exchange the rows of the tables of ``first`` and ``second`` (same fields, key and
    indexes) by rewriting both in ``buffer``, which must hold no writes yet."""
    if first.table_id == second.table_id:
        return
    # Both read from the store itself: taken before the first write is buffered.
    rows = _merged(_entries(buffer, first), _entries(buffer, second))
    one, other = KvTable(buffer, first), KvTable(buffer, second)
    now = one._clock()
    for a, b in rows:
        old_a = None if a is None else (first.decode_row(a), a)
        old_b = None if b is None else (second.decode_row(b), b)
        _replace(one, old_a, None if old_b is None else one._live(old_b[0], now), now)
        _replace(other, old_b, None if old_a is None else other._live(old_a[0], now), now)


def _replace(table: KvTable, old: tuple[Stored, bytes] | None, new: Stored | None, now: int) -> None:
    """Make ``new`` (None: no row) the row of ``table`` where ``old`` (the row and its
    stored bytes) is stored now."""
    was: Stored | None = None
    if old is not None:
        table._last_read = old  # an event's prev: these bytes, not encoded again
        was = old[0]
        if table._live(was, now) is None:
            table._remove(key_of(table.spec, was.values), was, expired=True)
            was = None
    if new is not None:
        table._put(key_of(table.spec, new.values), new.values, new.version, was, new.expires)
    elif was is not None:
        table._remove(key_of(table.spec, was.values), was)


def _entries(buffer: WriteBuffer, layout: Layout) -> Iterator[_Entry]:
    """The table's stored rows in key order, as the store holds them (``buffer`` reads
    straight from its session while it holds no writes)."""
    lo, hi = layout.row_prefix, prefix_successor(layout.row_prefix)
    start = len(lo)
    keys = (k[start:] for k in buffer.keys(lo, hi))
    return zip(keys, buffer.values(lo, hi))


def _merged(first: Iterator[_Entry], second: Iterator[_Entry]) -> Iterator[tuple[bytes | None, bytes | None]]:
    """The stored values of two tables' rows paired by key, in key order (None: no row)."""
    a, b = next(first, None), next(second, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            assert a is not None
            yield a[1], None
            a = next(first, None)
        elif a is None or b[0] < a[0]:
            yield None, b[1]
            b = next(second, None)
        else:
            yield a[1], b[1]
            a, b = next(first, None), next(second, None)


__all__ = ["exchange_rows"]
