"""A transaction's view of the store: its buffered writes over an exclusive session.

Reads see the store merged with the transaction's own writes (read your writes);
nothing reaches the store until :meth:`WriteBuffer.flush` commits the buffer as one
atomic batch. Scans opened through :meth:`WriteBuffer.cursor` refuse to run once the
transaction has ended.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from spi.clock import SYSTEM_CLOCK, Clock
from spi.codec import prefix_successor
from spi.kv.spill import Block, SpilledWrites, Write, blocks_of
from spi.kv.store import StoreSession, chunked, ended_error
from spi.primitives import Stored

if TYPE_CHECKING:
    from sortedcontainers import SortedList

_CHUNK = 256
"""Buffered keys merged into a scan per step (see :meth:`WriteBuffer.iterate`)."""
_PROBE = 1024
"""Stored keys :meth:`WriteBuffer.get_many` walks at most before it looks keys up one
by one instead (and a quarter of the keys it reads at most)."""


class Cursor:
    """A scan iterator that refuses to run after its transaction ended."""

    def __init__(self, buffer: WriteBuffer, rows: Iterator[Stored]) -> None:
        self._buffer = buffer
        self._rows = rows

    def __iter__(self) -> Cursor:
        return self

    def __next__(self) -> Stored:
        if self._buffer.ended:
            raise ended_error()
        return next(self._rows)

    def close(self) -> None:
        """Drop the underlying store iterators."""
        close = getattr(self._rows, "close", None)
        if close is not None:
            close()


class WriteBuffer:
    """Buffered writes over an exclusive store session, with read-your-writes reads."""

    def __init__(self, session: StoreSession, clock: Clock = SYSTEM_CLOCK) -> None:
        self._session = session
        self.clock = clock
        """The clock that decides expiry for the tables read and written through this
        buffer (:mod:`spi.clock`; the provider's, set when the transaction begins)."""
        # Buffered writes; their keys are kept sorted only once a scan needs them,
        # so write-only transactions (bulk loads) pay a dict insert per write.
        self._writes: dict[bytes, bytes | None] = {}
        # Runs of a load: keys strictly increasing, each run's key range holding no
        # other buffered key; kept as lists (no dict insert, no sort at commit) until
        # a read or write that may touch their range merges them into ``_writes``.
        self._runs: list[tuple[list[bytes], list[bytes | None]]] = []
        self._sorted: SortedList | None = None
        self._range_deletes: list[tuple[bytes, bytes]] = []
        self._last: tuple[list[bytes], list[bytes]] | None = None  # see append_last
        self._last_stream: Iterator[Write] | None = None  # see append_last_stream
        self._spill: SpilledWrites | None = None  # see allow_spill
        self._spill_at = 0
        self._cuts: list[bytes] = []  # see cut_files_at
        self._cursors: weakref.WeakSet[Cursor] | None = None  # made by the first cursor
        self.ended = False
        self.events: list[Any] = []
        """Change-feed events of this transaction's writes to change-fed tables, in
        call order (:data:`spi.kv.feed.Events`); they get a revision at commit."""
        self.row_deltas: dict[bytes, int] = {}
        """Per table row counter key (:attr:`spi.kv.layout.Layout.count_key`), the rows
        this transaction added (removed: negative); the commit applies them."""
        self.feed_touched = False
        """True when a change-fed table's catalog entry changes: the commit takes a
        revision even without events, which wakes the table's watchers."""

    def generation(self) -> int | None:
        """The store's generation (see :meth:`StoreSession.generation`)."""
        return self._session.generation()

    def known_revision(self) -> int | None:
        """See :meth:`StoreSession.known_revision`."""
        return self._session.known_revision()

    def feed_log(self) -> object | None:
        """See :meth:`StoreSession.feed_log`."""
        return self._session.feed_log()

    def blind_counters(self) -> bool:
        """See :meth:`StoreSession.blind_counters`."""
        return self._session.blind_counters()

    def is_buffered(self, key: bytes) -> bool:
        """True if this transaction wrote ``key`` (its value is not the store's)."""
        self._settle(key, key)
        return key in self._writes

    def get(self, key: bytes) -> bytes | None:
        """The value under ``key`` as this transaction sees it."""
        if self._runs:
            self._settle(key, key)
        writes = self._writes
        if writes and key in writes:
            return writes[key]
        return self._session.get(key)

    def get_many(self, keys: list[bytes], *, ordered: bool = False) -> list[bytes | None]:
        """The values under ``keys`` as this transaction sees them, in order;
        ``ordered``: the keys are strictly increasing.

        The keys not written by this transaction are read by :meth:`_stored`.
        """
        if not keys:
            return []
        lo, hi = (keys[0], keys[-1]) if ordered else (min(keys), max(keys))
        self._settle(lo, hi)  # a load's runs below these keys stay as they are
        writes = self._writes
        if not writes or writes.keys().isdisjoint(keys):  # one pass in C
            return self._stored(keys, lo, hi)
        pending = [k for k in keys if k not in writes]
        stored: dict[bytes, bytes | None] = {}
        if pending:
            stored = dict(zip(pending, self._stored(pending, min(pending), max(pending))))
        return [writes[k] if k in writes else stored.get(k) for k in keys]

    def _stored(self, keys: list[bytes], lo: bytes, hi: bytes) -> list[bytes | None]:
        """The stored values under ``keys`` (``lo`` and ``hi`` the least and the
        greatest). When few stored keys lie between them (a load into an empty stretch,
        or beside rows loaded before, as a file in departure order meets its last
        batch's day), reading those is one seek and a short walk, not a lookup per
        key; else (after a walk of at most :data:`_PROBE` keys) one lookup per key."""
        limit = min(len(keys) // 4, _PROBE)
        near = self._stored_items(lo, hi, limit + 1)
        if len(near) > limit:
            return self._session.get_many(keys)
        if not near:
            return [None] * len(keys)
        return list(map(dict(near).get, keys))

    def any_stored(self, lo: bytes, last: bytes) -> bool:
        """True if the store holds a key in ``[lo, last]`` (this transaction's writes aside)."""
        return bool(self._stored_items(lo, last, 1))

    def _stored_items(self, lo: bytes, last: bytes, n: int) -> list[tuple[bytes, bytes]]:
        """The store's first ``n`` items in ``[lo, last]``, its iterator closed after."""
        items = self._session.iterate(lo, last + b"\x00", False)
        try:
            return list(islice(items, n))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def values(self, lo: bytes, hi: bytes | None, reverse: bool = False) -> Iterator[bytes]:
        """The values of :meth:`iterate` (straight from the store when nothing is buffered)."""
        self._settle()
        if not self._writes:
            return self._session.values(lo, hi, reverse)
        return (v for _, v in self.iterate(lo, hi, reverse))

    def value_chunks(self, lo: bytes, hi: bytes | None, reverse: bool, first: int) -> Iterator[list[bytes]]:
        """The values of :meth:`values` in lists (see :meth:`StoreSession.value_chunks`)."""
        self._settle()
        if not self._writes:
            return self._session.value_chunks(lo, hi, reverse, first)
        return chunked(self.values(lo, hi, reverse), first)

    def item_chunks(self, lo: bytes, hi: bytes | None, first: int) -> Iterator[list[tuple[bytes, bytes]]]:
        """The items of :meth:`iterate` (forwards) in lists (see
        :meth:`StoreSession.item_chunks`)."""
        self._settle()
        if not self._writes:
            return self._session.item_chunks(lo, hi, first)
        return chunked(self.iterate(lo, hi), first)

    def keys(self, lo: bytes, hi: bytes | None) -> Iterator[bytes]:
        """The keys of :meth:`iterate` (straight from the store when nothing is buffered)."""
        self._settle()
        if not self._writes:
            return self._session.keys(lo, hi)
        return (k for k, _ in self.iterate(lo, hi))

    def put(self, key: bytes, value: bytes | None) -> None:
        """Buffer a write (None: a delete)."""
        if self._runs:
            self._settle(key, key)
        if self._sorted is not None and key not in self._writes:
            self._sorted.add(key)
        self._writes[key] = value

    def put_many(self, keys: list[bytes], values: Iterable[bytes | None], *, ordered: bool = False) -> None:
        """Buffer the writes of ``values`` under ``keys`` (bulk loads); ``ordered``: the
        keys are strictly increasing, so a load's run of them into a buffer without
        other writes is kept as it is, in order, for the commit."""
        if ordered and keys and not self._writes and self._sorted is None and self._outside_runs(keys[0], keys[-1]):
            self._runs.append((keys, values if isinstance(values, list) else list(values)))
            return
        self._settle()
        if self._sorted is not None:
            self._sorted.update({k for k in keys if k not in self._writes})  # a key given twice is added once
        self._writes.update(zip(keys, values))

    def append_last(self, keys: list[bytes], values: list[bytes]) -> None:
        """Write ``values`` under ``keys`` at commit: keys in order, written once,
        never read back and (usually) above every other key written (the change feed)."""
        self._last = (keys, values)

    def append_last_stream(self, writes: Iterator[Write]) -> None:
        """:meth:`append_last` for a spilled transaction: ``writes`` (key order) are
        made as the commit streams them."""
        self._last_stream = writes

    def commits_sorted_stream(self) -> bool:
        """See :meth:`StoreSession.commits_sorted_stream`."""
        return self._session.commits_sorted_stream()

    def allow_spill(self, at: int) -> None:
        """Let :meth:`spill_if_large` move the buffered writes and events to disk once
        they number ``at``, if the session commits a sorted stream (RocksDB). Only for a
        transaction that never reads back what it wrote before the last spill: the
        auto-commit range update or delete, which goes forward through the table, and a
        chunk of a load in key order (:mod:`spi.kv.chunked_load`)."""
        if self._session.commits_sorted_stream():
            self._spill_at = at

    def cut_files_at(self, cuts: Iterable[bytes]) -> None:
        """Where a spilled commit's store may start a new file (see
        :meth:`StoreSession.commit_sorted`)."""
        self._cuts = sorted({*self._cuts, *cuts})

    def spill_if_large(self) -> None:
        """Move the buffered writes (sorted) and events to disk when they are many (see
        :meth:`allow_spill`); the commit merges them back in key order."""
        if not self._spill_at:
            return
        if len(self._writes) + sum(len(keys) for keys, _ in self._runs) + len(self.events) < self._spill_at:
            return
        if self._spill is None:
            self._spill = SpilledWrites()
        self._spill.add_run(*self._in_order())
        self._spill.add_events(self.events)
        self._writes, self._sorted, self._runs = {}, None, []
        self.events.clear()  # in place: tables hold this list

    def spilled_events(self) -> Iterator[Any] | None:
        """The events spilled so far (the buffered ones follow them), or None when
        nothing was spilled."""
        spill = self._spill
        return None if spill is None or not spill.has_events() else spill.events()

    def has_events(self) -> bool:
        """Whether this transaction recorded a change-feed event (buffered or spilled)."""
        return bool(self.events) or (self._spill is not None and self._spill.has_events())

    def remove(self, key: bytes) -> None:
        """Buffer a delete."""
        self.put(key, None)

    def delete_prefix(self, prefix: bytes) -> None:
        """Delete every key under ``prefix`` at commit (used for drops, never read after)."""
        hi = prefix_successor(prefix)
        assert hi is not None
        self.delete_range(prefix, hi)

    def delete_range(self, prefix: bytes, hi: bytes) -> None:
        """Delete every key in ``[prefix, hi)`` at commit (never read after)."""
        self._settle()
        self._range_deletes.append((prefix, hi))
        for k in list(self._sorted_writes().irange(prefix, hi, inclusive=(True, False))):
            del self._writes[k]
            self._sorted_writes().remove(k)

    def _outside_runs(self, lo: bytes, hi: bytes) -> bool:
        """True when no pending run's key range meets ``[lo, hi]``."""
        return all(hi < keys[0] or lo > keys[-1] for keys, _ in self._runs)

    def _settle(self, lo: bytes | None = None, hi: bytes | None = None) -> None:
        """Merge the pending runs into the buffered writes (unless ``[lo, hi]`` is
        given and none of their ranges meets it)."""
        if not self._runs or (lo is not None and hi is not None and self._outside_runs(lo, hi)):
            return
        runs, self._runs = self._runs, []
        for keys, values in runs:  # no sorted index exists while runs are pending (see put_many)
            self._writes.update(zip(keys, values))

    def _in_order(self) -> tuple[list[bytes], list[bytes | None]]:
        """Every buffered write in key order: the writes sorted, the pending runs put
        in place as they are (no buffered key lies inside a run's range)."""
        writes = self._writes
        keys = sorted(writes)
        values: list[bytes | None] = list(map(writes.__getitem__, keys))
        out_keys: list[bytes] = []
        out_values: list[bytes | None] = []
        at = 0
        for run_keys, run_values in sorted(self._runs, key=lambda run: run[0][0]):
            i = bisect_left(keys, run_keys[0], at)
            out_keys += keys[at:i]
            out_keys += run_keys
            out_values += values[at:i]
            out_values += run_values
            at = i
        out_keys += keys[at:]
        out_values += values[at:]
        return out_keys, out_values

    def _sorted_writes(self) -> SortedList:
        self._settle()
        if self._sorted is None:
            from sortedcontainers import SortedList  # only transactions that scan their own writes need it

            self._sorted = SortedList(self._writes)
        return self._sorted

    def iterate(self, lo: bytes, hi: bytes | None, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Items in ``[lo, hi)`` merged with this transaction's writes."""
        self._settle()
        base = self._session.iterate(lo, hi, reverse)
        if not self._writes:
            yield from base
            return
        overlay = self._overlay(lo, hi, reverse)
        b = next(base, None)
        o = next(overlay, None)
        while b is not None or o is not None:
            if o is None or (b is not None and b[0] != o[0] and (b[0] < o[0]) != reverse):
                assert b is not None
                yield b  # the store's item comes first in iteration order
                b = next(base, None)
                continue
            if b is not None and b[0] == o[0]:
                b = next(base, None)  # the buffered write shadows the stored value
            value = self._writes.get(o[0])
            if value is not None:
                yield o[0], value
            o = next(overlay, None)

    def _overlay(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[tuple[bytes, None]]:
        # Chunked so that writes made while a scan is being consumed are safe.
        pos: bytes | None = None
        while True:
            if reverse:
                upper = hi if pos is None else pos
                keys = list(islice(self._sorted_writes().irange(lo, upper, (True, False), reverse=True), _CHUNK))
            else:
                lower, inclusive = (lo, True) if pos is None else (pos, False)
                keys = list(islice(self._sorted_writes().irange(lower, hi, (inclusive, False)), _CHUNK))
            for k in keys:
                yield k, None
            if len(keys) < _CHUNK:
                return
            pos = keys[-1]

    def cursor(self, rows: Iterator[Stored]) -> Cursor:
        """Wrap a scan so it is closed when the transaction ends."""
        c = Cursor(self, rows)
        if self._cursors is None:
            self._cursors = weakref.WeakSet()
        self._cursors.add(c)
        return c

    def end(self) -> None:
        """Mark the transaction ended and close its open scans."""
        self.ended = True
        if self._cursors is not None:
            for c in list(self._cursors):
                c.close()
            self._cursors = None

    def flush(self, revision: int | None = None) -> None:
        """Commit the buffered writes to the store as one batch, then release the
        session; ``revision``: the change-feed revision the batch takes, announced
        (:meth:`StoreSession.announce`) before the session ends."""
        try:
            self.end()
            if self._spill is not None:
                self._flush_spilled()
            else:
                self._flush_buffered()
            if revision is not None:
                self._session.announce(revision)
        finally:
            self._close_spill()
            self._session.release()

    def _flush_buffered(self) -> None:
        writes, last = self._writes, self._last
        if len(writes) == 1 and not (self._runs or self._range_deletes or last):
            self._session.commit(self._range_deletes, list(writes), list(writes.values()))  # a point write
        elif writes or self._runs or self._range_deletes or last:
            # In key order: RocksDB inserts a sorted batch several times faster.
            if self._runs:
                keys, values = self._in_order()
            else:  # the common case (point writes), without a call
                keys = sorted(writes)
                values = list(map(writes.__getitem__, keys))
            if last is not None and keys and keys[-1] >= last[0][0]:
                self._settle()
                writes.update(zip(*last))  # rare (a retention trim): sort them in
                keys = sorted(writes)
                values = list(map(writes.__getitem__, keys))
            elif last is not None:
                keys += last[0]
                values += last[1]
            self._session.commit(self._range_deletes, keys, values)

    def _flush_spilled(self) -> None:
        """Commit a spilled transaction: its runs, what is still buffered and the feed's
        pages, merged into one sorted stream for the store."""
        assert self._spill is not None
        buffered: Block = self._in_order()
        last: Block = ([], []) if self._last is None else (self._last[0], list(self._last[1]))
        streams = [[buffered], [last], blocks_of(self._last_stream or iter(()))]
        self._session.commit_sorted(self._range_deletes, self._spill.merged(*streams), self._cuts)

    def _close_spill(self) -> None:
        spill, self._spill = self._spill, None
        if spill is not None:
            spill.close()

    def discard(self) -> None:
        """Drop the buffered writes and release the session."""
        try:
            self.end()
        finally:
            self._close_spill()
            self._session.release()
