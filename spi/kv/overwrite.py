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

A side without a feed (the staging table of an overwrite) records nothing, so it
needs no row-by-row writes: it takes a copy of the other table's whole key space
(rows, index entries, expiry entries, row counter) with its own prefix, and that
table's stored column layout, as one ordered run of the batch; its own entries that
the copy does not overwrite are deleted.

The commit is one atomic store batch, so the rows of both tables are in it; what is
held per row is the encoded entries the batch needs and the events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from spi.codec import prefix_successor
from spi.keys import key_of
from spi.kv.buffer import WriteBuffer
from spi.kv.layout import Layout
from spi.kv.table import KvTable
from spi.kv.transaction import KvTransaction
from spi.primitives import Stored

_Entry = tuple[bytes, bytes]
"""A stored row: its encoded key (without the table's prefix) and its stored value."""


def exchange_rows(tx: KvTransaction, first: Layout, second: Layout) -> None:
    """Exchange the rows of the tables of ``first`` and ``second`` (same fields, key and
    indexes, at least one change-fed) in ``tx``, which must hold no writes yet."""
    if first.table_id == second.table_id:
        return
    # Every read is straight from the store: taken before the first write is buffered.
    rows = _merged(_entries(tx, first), _entries(tx, second))
    plain = [(source, target) for source, target in ((second, first), (first, second)) if not target.spec.changes]
    for source, target in plain:  # at most one: two tables without a feed trade ids instead
        keys, values = _copy(tx, source, target)
        tx.put_many(keys, cast(list[bytes], values), ordered=True)  # None deletes, as in any batch
        tx.save_layout(Layout(target.spec, source.columns, target.table_id))
    one, other = KvTable(tx, first), KvTable(tx, second)
    now = one._clock()
    for a, b in rows:
        old_a = None if a is None else (first.decode_row(a), a)
        old_b = None if b is None else (second.decode_row(b), b)
        if first.spec.changes:
            _replace(one, old_a, None if old_b is None else one._live(old_b[0], now), now)
        if second.spec.changes:
            _replace(other, old_b, None if old_a is None else other._live(old_a[0], now), now)


def _copy(view: WriteBuffer, source: Layout, target: Layout) -> tuple[list[bytes], list[bytes | None]]:
    """The writes that make ``target``'s key space a copy of ``source``'s, in key order:
    each source entry under the target's prefix, and a delete of each target entry
    that no source entry replaces."""
    src, dst = source.prefix, target.prefix
    hi_src, hi_dst = prefix_successor(src), prefix_successor(dst)
    cut = len(src)
    copied = [dst + k[cut:] for k in view.keys(src, hi_src)]
    values: list[bytes | None] = list(view.values(src, hi_src))
    existing = view.keys(dst, hi_dst)
    keys: list[bytes] = []
    out: list[bytes | None] = []
    at = 0
    for k in existing:
        while at < len(copied) and copied[at] < k:
            keys.append(copied[at])
            out.append(values[at])
            at += 1
        if at < len(copied) and copied[at] == k:  # overwritten by the copy
            keys.append(k)
            out.append(values[at])
            at += 1
            continue
        keys.append(k)
        out.append(None)
    keys += copied[at:]
    out += values[at:]
    return keys, out


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
