"""Tables' row counters: a count entry per table (``Layout.count_key``), kept by the
commits that add or remove rows, so ``count()`` of a whole table is one read.

A commit adds its rows' net change to the entry. On an exclusive store it rewrites
the entry. On an optimistic one (:meth:`spi.kv.StoreSession.blind_counters`: etcd)
rewriting one key per table would make any two concurrent inserts into the table
conflict, so the commit writes its delta as an entry of its own under the count
entry (``count_key`` + ``0x00`` + a random token) and only reads the count entry,
which then never changes. Now and then (:data:`FOLD_EVERY`) a commit folds the first
:data:`FOLD_MAX` deltas into one new delta: that commit reads them (a range read,
which a concurrent insert makes it retry), the others are untouched. A fold is
bounded so that it fits a commit of a store with bounded commits (etcd's 128
operations) however many deltas wait; folding more deltas than a fold's share of
commits adds keeps their number small. A count reads the
entry and the deltas — a range read, so it conflicts, as it must, with a commit
that adds one.
"""

from __future__ import annotations

import os
from itertools import islice

from spi.kv.buffer import WriteBuffer
from spi.kv.layout import pack, unpack

DELTA = b"\x00"
"""After a count entry's key: its delta entries."""
FOLD_EVERY = 16
"""One commit in this many that writes a delta folds deltas (on average)."""
FOLD_MAX = 24
"""The most deltas one fold reads and removes (the operations it adds to its commit)."""


def delta_key(count_key: bytes) -> bytes:
    """A new delta entry's key under the count entry ``count_key``."""
    return count_key + DELTA + os.urandom(8)


def _deltas(view: WriteBuffer, count_key: bytes, most: int | None = None) -> tuple[list[bytes], int]:
    """The delta entries under ``count_key`` (the first ``most`` when given) and their sum."""
    found = list(islice(view.iterate(count_key + DELTA, count_key + b"\x01", False), most))
    return [k for k, _ in found], sum(int(unpack(v)) for _, v in found)


def stored(view: WriteBuffer, count_key: bytes) -> int | None:
    """The count ``view`` sees under ``count_key`` (None: the table keeps none)."""
    raw = view.get(count_key)
    if raw is None:
        return None
    total = int(unpack(raw))
    if view.blind_counters():
        total += _deltas(view, count_key)[1]
    return total


def adding(count_key: bytes, raw: bytes, delta: int, blind: bool) -> tuple[bytes, bytes]:
    """The one write that adds ``delta`` rows to the count stored as ``raw`` under
    ``count_key``: a delta entry of its own when ``blind``, else the count rewritten."""
    if blind:
        return delta_key(count_key), pack(delta)
    return count_key, pack(int(unpack(raw)) + delta)


def add(buffer: WriteBuffer, count_key: bytes, delta: int) -> None:
    """Add ``delta`` rows to the count under ``count_key`` at commit (a table made
    before row counters has none: nothing then)."""
    raw = buffer.get(count_key)
    if raw is None:
        return
    blind = buffer.blind_counters()
    if not blind or _chance(FOLD_EVERY):
        buffer.put(*adding(count_key, raw, delta, blind))
    else:  # fold deltas into one: the count entry itself, which every adder reads, stays as it is
        keys, total = _deltas(buffer, count_key, FOLD_MAX)
        for key in keys:
            buffer.remove(key)
        buffer.put(delta_key(count_key), pack(total + delta))


__all__ = ["DELTA", "FOLD_EVERY", "FOLD_MAX", "add", "adding", "delta_key", "stored"]


def _chance(n: int) -> int:
    """A random number below ``n`` (``random`` imported on the first blind add, not at start-up)."""
    import random

    return random.randrange(n)
