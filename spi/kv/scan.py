"""Running a planned scan over one table's layout: key-range reads, index scans,
orders by other key columns, counts, splits and plans.

Rows are built as ``make(values, version)`` straight from the store's values, so a
scan costs one msgpack decode and one dict per row it returns.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from itertools import islice, starmap
from typing import Any, TypeVar

from spi.clock import now_micros
from spi.codec import decode_key, decode_nullable, encode_nullable, prefix_successor
from spi.filters import Expr
from spi.keys import Range, ResolvedRange, key_of, quantile_cuts, ranges_between
from spi.kv import counters
from spi.kv.buffer import WriteBuffer
from spi.kv.layout import Layout, range_bytes
from spi.kv.layout import unpack as _unpack
from spi.kv.store import FIRST_CHUNK, MAX_CHUNK, ended_error
from spi.planner import Plan, plan_scan
from spi.predicate import row_filter
from spi.primitives import ScanRequest, Stored, sort_position
from spi.row import Row
from spi.types import FieldType

_FIRST_FETCH = 16
"""Rows an index scan fetches in its first multi-get (later runs grow to 256)."""
_MAX_FETCH = 256
T = TypeVar("T")


class Scanner:
    """The scans of one table in one transaction (rows expire on the buffer's clock,
    :attr:`WriteBuffer.clock`)."""

    def __init__(self, buffer: WriteBuffer, layout: Layout) -> None:
        self._buffer = buffer
        self._layout = layout
        self.spec = layout.spec

    def stream(self, request: ScanRequest, make: Callable[..., T]) -> Iterator[T]:
        """The rows of ``request`` that have not expired, each as ``make(values,
        version)`` or, for a row that expires, ``make(values, version, expires)``."""
        plan = plan_scan(
            self.spec, request.key_range, request.where, order_by=request.order_by, descending=request.descending
        )
        if plan.empty or request.limit == 0:
            return iter(())
        # The common cases: one generator over the store builds the rows.
        if plan.index is None and plan.order_by is None:
            return self._key_rows(plan.key_range, plan.descending, request.after, plan.residual, request.limit, make)
        if plan.index is not None and make is Row:  # rows decoded a fetched run at a time, filtered on the stored array
            index_chunks = self._index_chunks(plan, request.after)
            read_rows = self._layout.readers(plan.residual)[0]
            return read_rows(self._buffer, index_chunks, request.limit, self._buffer.clock)  # type: ignore[return-value]
        if plan.index is not None and plan.residual is None:
            found = self._index_rows(plan, request.after, make)
            return found if request.limit is None else islice(found, request.limit)
        rows = self._rows(plan, request.after)
        if request.limit is not None:
            rows = islice(rows, request.limit)
        cursor = self._buffer.cursor(rows)
        return cursor if make is Stored else starmap(make, cursor)  # type: ignore[return-value]

    def row_list(self, request: ScanRequest) -> list[Row]:
        """The rows :meth:`stream` makes as :class:`Row`, in one list read now
        (a page: a key-order scan builds it in one call, no generator step per row)."""
        plan = plan_scan(
            self.spec, request.key_range, request.where, order_by=request.order_by, descending=request.descending
        )
        if plan.empty or plan.index is not None or plan.order_by is not None:
            return list(self.stream(request, Row))
        bounds = self._key_bounds(plan.key_range, plan.descending, request.after)
        if bounds is None or request.limit == 0:
            return []
        lo, hi = bounds
        chunks = self._buffer.value_chunks(lo, hi, plan.descending, _first_chunk(request.limit))
        return self._layout.readers(plan.residual)[1](chunks, request.limit, self._buffer.clock)

    def stored_matches(self, request: ScanRequest, chunk: int) -> Iterator[list[tuple[bytes, bytes, list[Any]]]] | None:
        """The live rows in the key range of ``request`` that match its ``where``, as
        stored: chunks of about ``chunk`` ``(store key, stored bytes, unpacked value)``
        in key order, tested a chunk of the store's at a time without building a row
        (:meth:`~spi.kv.layout.Layout.readers`); a chunk's rows may be written before
        the next is read. None when the request's plan is not a key-range read (an
        index, or another order)."""
        plan = plan_scan(self.spec, request.key_range, request.where)
        if plan.index is not None or plan.order_by is not None:
            return None
        return self._stored_matches(plan, chunk)

    def _stored_matches(self, plan: Plan, chunk: int) -> Iterator[list[tuple[bytes, bytes, list[Any]]]]:
        bounds = None if plan.empty else self._key_bounds(plan.key_range, False, None)
        if bounds is None:
            return
        lo, hi = bounds
        tx, positions = self._buffer, self._layout.readers(plan.residual)[3]
        now = now_micros(tx.clock)
        found: list[tuple[bytes, bytes, list[Any]]] = []
        # The store's chunks are read past the rows written meanwhile (the buffer's
        # view merges its own writes chunk by chunk), so one pass reads them all.
        for part in tx.item_chunks(lo, hi, chunk):
            if tx.ended:
                raise ended_error()
            values = [data for _, data in part]
            found += [(part[i][0], values[i], _unpack(values[i])) for i in positions(values, now)]
            if len(found) >= chunk:
                yield found
                found = []
        if found:
            yield found

    def stored_page(
        self, key_range: ResolvedRange, descending: bool, after: bytes | None, size: int
    ) -> tuple[list[bytes], bytes | None]:
        """Up to ``size`` stored values in ``key_range``, in key order, after the
        encoded key ``after``; and the encoded key of the last of them when more may
        follow (None: none do)."""
        bounds = self._key_bounds(key_range, descending, after)
        if bounds is None or size == 0:
            return [], None
        lo, hi = bounds
        chunks = self._buffer.value_chunks(lo, hi, descending, size + 1)
        values = next(chunks, [])  # the first chunk is the whole page, unless the store hands less
        while len(values) <= size:
            more = next(chunks, None)
            if not more:
                return values, None
            values = values + more
        del values[size:]
        lay = self._layout
        return values, lay.encode_key(key_of(self.spec, lay.decode_row(values[-1]).values))

    def _key_bounds(
        self, key_range: ResolvedRange, descending: bool, after: bytes | None
    ) -> tuple[bytes, bytes | None] | None:
        """The store interval ``[lo, hi)`` of the rows in ``key_range`` after the key
        ``after`` in scan order; None when it is empty."""
        lay = self._layout
        lo, hi = range_bytes(lay.row_prefix, lay.key_types, key_range)
        if after is not None:
            if descending:
                bound = lay.row_prefix + after
                hi = bound if hi is None else min(hi, bound)
            else:
                lo = max(lo, lay.row_prefix + after + b"\x00")
        return None if hi is not None and lo >= hi else (lo, hi)

    def _rows(self, plan: Plan, after: bytes | None) -> Iterator[Stored]:
        if plan.empty:
            return iter(())
        if plan.index is not None:
            rows = self._index_rows(plan, after)
        elif plan.order_by is not None:
            rows = self._key_column_order(plan, after)
        else:
            rows = self._key_rows(plan.key_range, plan.descending, after)
        if plan.residual is None:
            return rows
        keep = row_filter(plan.residual, self.spec)
        return (r for r in rows if keep(r.values))

    def _key_rows(
        self,
        key_range: ResolvedRange,
        descending: bool,
        after: bytes | None,
        where: Expr | None = None,
        limit: int | None = None,
        make: Callable[..., Any] = Stored,
    ) -> Iterator[Any]:
        """Rows in key order matching ``where``, at most ``limit``, as ``make(values, version)``."""
        lay = self._layout
        bounds = self._key_bounds(key_range, descending, after)
        if bounds is None or limit == 0:
            return
        lo, hi = bounds
        tx, unpack, values_of = self._buffer, _unpack, lay.values_of
        keep = None if where is None else row_filter(where, self.spec)
        if make is Row:
            yield from lay.readers(where)[0](
                tx, tx.value_chunks(lo, hi, descending, _first_chunk(limit)), limit, tx.clock
            )
            return
        stored = tx.values(lo, hi, descending)
        n = 0
        now = now_micros(tx.clock)
        while True:
            if tx.ended:  # checked before the store is touched again
                raise ended_error()
            data = next(stored, None)
            if data is None:
                return
            raw = unpack(data)
            head = raw[0]
            if head.__class__ is not int and head[1] <= now:  # not is_live, inline (spi.clock)
                continue
            values = values_of(raw)
            if keep is not None and not keep(values):
                continue
            yield make(values, head) if head.__class__ is int else make(values, head[0], head[1])
            n += 1
            if n == limit:
                return

    def _index_entries(self, column: str, plan: Plan, after: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """(position, encoded key) of index entries in scan order, strictly after ``after``.

        ``position`` is the nullable value encoding followed by the key, which is
        exactly the sort position of an index-ordered scan.
        """
        lay = self._layout
        prefix = lay.index_prefix(column)
        ftype = self.spec.type_of(column)
        n = len(prefix)
        if plan.index_points is not None:
            runs = [encode_nullable(ftype, v) for v in plan.index_points]
            if plan.order_by is None:
                # Key order: each value's run is sorted by key; merge the runs.
                streams = [
                    self._entries_in(
                        prefix + r,
                        prefix_successor(prefix + r),
                        plan.descending,
                        None if after is None else prefix + r + after,
                        n,
                        ftype,
                        len(r),
                    )
                    for r in runs
                ]
                if len(streams) == 1:
                    return streams[0]
                return heapq.merge(*streams, key=lambda e: e[1], reverse=plan.descending)
            ordered = runs[::-1] if plan.descending else runs
            start = None if after is None else prefix + after
            return (
                e
                for r in ordered
                for e in self._entries_in(
                    prefix + r, prefix_successor(prefix + r), plan.descending, start, n, ftype, len(r)
                )
            )
        b = plan.index_bounds
        if b is None:
            lo, hi = prefix, prefix_successor(prefix)
        else:
            lo = prefix + b"\x01" if b.lo is None else prefix + encode_nullable(ftype, b.lo)
            if b.lo is not None and not b.lo_inclusive:
                lo = prefix_successor(lo) or lo
            if b.hi is None:
                hi = prefix_successor(prefix)
            else:
                enc = prefix + encode_nullable(ftype, b.hi)
                hi = prefix_successor(enc) if b.hi_inclusive else enc
        return self._entries_in(lo, hi, plan.descending, None if after is None else prefix + after, n, ftype)

    def _entries_in(
        self,
        lo: bytes,
        hi: bytes | None,
        descending: bool,
        after: bytes | None,
        n: int,
        ftype: FieldType,
        width: int | None = None,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Entries in ``[lo, hi)`` after ``after``; ``width``: the length of the value
        encoding when the range holds entries of one value only."""
        if after is not None:
            if descending:
                hi = after if hi is None else min(hi, after)
            else:
                lo = max(lo, after + b"\x00")
        if hi is not None and lo >= hi:
            return
        if width is not None:
            for k, _ in self._buffer.iterate(lo, hi, descending):
                yield k[n:], k[n + width :]
            return
        for k, _ in self._buffer.iterate(lo, hi, descending):
            position = k[n:]
            _, end = decode_nullable(ftype, position)
            yield position, position[end:]

    def _index_chunks(self, plan: Plan, after: bytes | None) -> Iterator[list[bytes]]:
        """The stored values of the rows an index scan finds, one multi-get of a run of
        entries at a time, in runs that grow so that a short scan fetches little."""
        assert plan.index is not None
        lay = self._layout
        # A key-ordered scan resumes by key; the entries carry the key after the value.
        entries = self._index_entries(plan.index, plan, after)
        lo, hi = range_bytes(b"", lay.key_types, plan.key_range)
        everything = plan.key_range == ResolvedRange.everything()
        tx, prefix = self._buffer, lay.row_prefix
        size = _FIRST_FETCH
        while True:
            run = list(islice(entries, size))
            keys = [prefix + enc for _, enc in run if everything or (lo <= enc and (hi is None or enc < hi))]
            yield [data for data in tx.get_many(keys) if data is not None]
            if len(run) < size:
                return
            size = min(size * 4, _MAX_FETCH)

    def _index_rows(self, plan: Plan, after: bytes | None, make: Callable[..., Any] = Stored) -> Iterator[Any]:
        """The rows an index scan finds, as ``make(values, version)``."""
        tx, unpack, values_of = self._buffer, _unpack, self._layout.values_of
        now = now_micros(tx.clock)
        chunks = self._index_chunks(plan, after)
        while True:
            if tx.ended:
                raise ended_error()
            chunk = next(chunks, None)
            if chunk is None:
                return
            for data in chunk:
                if tx.ended:
                    raise ended_error()
                raw = unpack(data)
                head = raw[0]
                if head.__class__ is int:
                    yield make(values_of(raw), head)
                elif head[1] > now:
                    yield make(values_of(raw), head[0], head[1])

    def _key_column_order(self, plan: Plan, after: bytes | None) -> Iterator[Stored]:
        """Order by a key column other than the first: merge one sorted run per
        distinct prefix of the key columns before it (memory grows with their count)."""
        assert plan.order_by is not None
        spec, lay = self.spec, self._layout
        depth = spec.primary_key.index(plan.order_by)
        lo, hi = range_bytes(lay.row_prefix, lay.key_types, plan.key_range)
        prefixes: list[tuple[Any, ...]] = []
        pos = lo
        n = len(lay.row_prefix)
        while True:
            item = next(self._buffer.iterate(pos, hi, False), None)
            if item is None:
                break
            values, end = decode_key(lay.key_types[:depth], item[0], n)
            prefixes.append(values)
            nxt = prefix_successor(item[0][:end])
            if nxt is None:
                break
            pos = nxt
        runs = [self._key_rows(_intersect_prefix(plan.key_range, p), plan.descending, None) for p in prefixes]
        column = plan.order_by

        def position(row: Stored) -> bytes:
            return sort_position(spec, row.values, column)

        merged = heapq.merge(*runs, key=position, reverse=plan.descending)
        if after is None:
            return merged
        if plan.descending:
            return (r for r in merged if position(r) < after)
        return (r for r in merged if position(r) > after)

    # -- other primitives ------------------------------------------------------------
    def count(self, key_range: ResolvedRange, where: Expr | None) -> int:
        """How many rows in ``key_range`` match ``where`` (keys only, of the rows or of
        an index's entries, when the plan filters nothing after reading and no row
        has expired unswept)."""
        plan = plan_scan(self.spec, key_range, where, ordered=False)
        if plan.empty:
            return 0
        lay = self._layout
        if plan.residual is None:
            now = now_micros(self._buffer.clock)
            if plan.index is None and plan.key_range == ResolvedRange.everything():
                stored = self.stored_count()
                if stored is not None:
                    return stored - sum(1 for _ in self._buffer.keys(lay.expiry_prefix, lay.expired_bound(now)))
            if plan.index is not None and not self.has_expired(now):
                entries = self._index_entries(plan.index, plan, None)
                if plan.key_range == ResolvedRange.everything():
                    return sum(1 for _ in entries)
                lo, hi = range_bytes(b"", lay.key_types, plan.key_range)
                return sum(1 for _, key in entries if lo <= key and (hi is None or key < hi))
            if plan.index is None and not self.has_expired(now):
                lo, hi = range_bytes(lay.row_prefix, lay.key_types, plan.key_range)
                return sum(1 for _ in self._buffer.keys(lo, hi))
        return sum(1 for _ in self._rows(plan, None))

    def stored_count(self) -> int | None:
        """How many rows the table stores as this transaction sees it (expired ones
        not swept yet included), from its row counter; None for a table without one."""
        key = self._layout.count_key
        total = counters.stored(self._buffer, key)
        return None if total is None else total + self._buffer.row_deltas.get(key, 0)

    def has_expired(self, now: int) -> bool:
        """True when a row of the table has expired by ``now`` and is not swept yet."""
        lay = self._layout
        return next(self._buffer.keys(lay.expiry_prefix, lay.expired_bound(now)), None) is not None

    def expired(self, now: int, limit: int) -> list[tuple[bytes, int]]:
        """Up to ``limit`` rows expired by ``now`` and not swept yet: (encoded key, expiry)."""
        lay = self._layout
        start = len(lay.expiry_prefix)
        found = []
        for k in self._buffer.keys(lay.expiry_prefix, lay.expired_bound(now)):
            found.append((k[start + 8 :], int.from_bytes(k[start : start + 8], "big")))
            if len(found) == limit:
                break
        return found

    def split(self, n: int) -> list[Range]:
        """About ``n`` key ranges of equal row counts, cut at quantiles of a key sample."""
        lay = self._layout
        lo, hi = lay.row_prefix, prefix_successor(lay.row_prefix)
        sample: list[bytes] = []
        step, seen = 1, 0
        for k, _ in self._buffer.iterate(lo, hi, False):
            if seen % step == 0:
                sample.append(k)
                if len(sample) >= 4096:
                    sample = sample[::2]
                    step *= 2
            seen += 1
        if n <= 1 or len(sample) < 2:
            return [Range()]
        return ranges_between([decode_key(lay.key_types, c, len(lay.row_prefix))[0] for c in quantile_cuts(sample, n)])

    def explain(self, key_range: ResolvedRange, where: Expr | None, order_by: str | None) -> str:
        """How :meth:`stream` would run this scan."""
        plan = plan_scan(self.spec, key_range, where, order_by=order_by)
        return plan.describe(self.spec)


def _first_chunk(limit: int | None) -> int:
    """How many values a scan of at most ``limit`` rows fetches first: all of them
    when they fit in one chunk (a page), else a few (the scan may be left early)."""
    return FIRST_CHUNK if limit is None or limit > MAX_CHUNK else max(limit, FIRST_CHUNK)


def _intersect_prefix(r: ResolvedRange, prefix: tuple[Any, ...]) -> ResolvedRange:
    """The part of ``r`` whose keys start with ``prefix`` (bounds compared by prefix)."""
    start, start_inc = prefix, True
    if r.start is not None and r.start[: len(prefix)] == prefix and len(r.start) > len(prefix):
        start, start_inc = r.start, r.start_inclusive
    end, end_inc = prefix, True
    if r.end is not None and r.end[: len(prefix)] == prefix and len(r.end) > len(prefix):
        end, end_inc = r.end, r.end_inclusive
    return ResolvedRange(start, start_inc, end, end_inc)
