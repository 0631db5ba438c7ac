"""A complete provider engine over an ordered byte store.

Providers whose storage is a sorted map of byte strings (the in-memory provider,
RocksDB) implement only :class:`OrderedStore` — exclusive sessions with ``get``,
ordered ``iterate`` and an atomic ``commit`` — and get every table operation, the
catalog, secondary indexes, planning, ``verify`` and serializable transactions
from :class:`KvProvider`.

Layout (all keys are byte strings, compared unsigned):

- ``00 'c' name`` → catalog entry (msgpack: spec, table id, stored column layout)
- ``00 'n'`` → the next table id
- ``01 tid(4) 00 key`` → row: msgpack ``[version, value...]`` in layout order
- ``01 tid(4) 01 col(2) nullable-value key`` → empty: index entry of column ``col``
  (its position in the layout); row and index entries change in one atomic commit

Transactions are serializable because a session is exclusive: a transaction
reads the store plus its own buffered writes and commits them as one batch.
"""

from __future__ import annotations

import heapq
import struct
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator
from itertools import islice
from typing import Any

import msgpack
from sortedcontainers import SortedList

from spi.codec import (
    decode_key,
    decode_nullable,
    encode_key,
    encode_nullable,
    from_micros,
    prefix_successor,
    to_micros,
)
from spi.errors import (
    KvError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
)
from spi.filters import Expr, matches
from spi.keys import Range, ResolvedRange
from spi.planner import Plan, plan_scan
from spi.provider import Admin, ProviderBase, TransactionBase
from spi.spec import TableSpec, plan_schema_change, validate_name
from spi.table import ScanRequest, Stored, TableBase, sort_position
from spi.types import FieldType

CATALOG = b"\x00c"
NEXT_ID = b"\x00n"
DATA = b"\x01"
ROWS = b"\x00"
INDEX = b"\x01"
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_CHUNK = 256


class StoreSession(ABC):
    """Exclusive access to an ordered byte store for one transaction."""

    @abstractmethod
    def get(self, key: bytes) -> bytes | None:
        """The value stored under ``key``."""

    @abstractmethod
    def iterate(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        """Items with ``lo <= key < hi`` (``hi`` None: no upper bound), in key order
        or reversed."""

    @abstractmethod
    def commit(self, range_deletes: list[tuple[bytes, bytes]], writes: list[tuple[bytes, bytes | None]]) -> None:
        """Atomically delete the ranges ``[lo, hi)``, then apply the writes (None deletes)."""

    @abstractmethod
    def release(self) -> None:
        """End the session (after commit or to abandon it)."""


class OrderedStore(ABC):
    """A sorted byte-string map that hands out exclusive sessions."""

    @abstractmethod
    def session(self) -> StoreSession:
        """Wait for exclusive access (busy timeout) and start a session."""

    def close(self) -> None:
        """Release everything the store holds."""


# --------------------------------------------------------------------------- values
class Layout:
    """How one table's rows are stored: column order and per-type value codecs."""

    def __init__(self, spec: TableSpec, columns: list[str], table_id: int) -> None:
        self.spec = spec
        self.columns = columns
        self.table_id = table_id
        self.prefix = DATA + _U32.pack(table_id)
        self.row_prefix = self.prefix + ROWS
        self.key_types = spec.key_types
        self.timestamps = [i for i, c in enumerate(columns) if spec.type_of(c) is FieldType.TIMESTAMP]
        self.index_ids = {c: columns.index(c) for c in spec.indexes}
        # A layout belongs to one transaction (one thread), so it may own a Packer.
        self._pack = msgpack.Packer(use_bin_type=True).pack

    def index_prefix(self, column: str) -> bytes:
        """Byte prefix of every entry of the index on ``column``."""
        return self.prefix + INDEX + _U16.pack(self.index_ids[column])

    def encode_row(self, values: dict[str, Any], version: int) -> bytes:
        """The stored form of a full row."""
        out: list[Any] = [version]
        out.extend(values[c] for c in self.columns)
        for i in self.timestamps:
            if out[i + 1] is not None:
                out[i + 1] = to_micros(out[i + 1])
        return self._pack(out)  # type: ignore[no-any-return]

    def decode_row(self, data: bytes) -> Stored:
        """Inverse of :meth:`encode_row` (columns added later read as null)."""
        raw = msgpack.unpackb(data)
        if len(raw) <= len(self.columns):
            raw.extend([None] * (len(self.columns) + 1 - len(raw)))
        for i in self.timestamps:
            if raw[i + 1] is not None:
                raw[i + 1] = from_micros(raw[i + 1])
        it = iter(raw)
        version = next(it)
        return Stored(dict(zip(self.columns, it)), version)

    def row_key(self, key: tuple[Any, ...]) -> bytes:
        """Store key of the row with ``key``."""
        return self.row_prefix + encode_key(self.key_types, key)

    def index_key(self, column: str, value: Any, encoded_key: bytes) -> bytes:
        """Store key of one index entry."""
        return self.index_prefix(column) + encode_nullable(self.spec.type_of(column), value) + encoded_key


def _catalog_key(name: str) -> bytes:
    return CATALOG + name.encode("utf-8")


def _pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)  # type: ignore[no-any-return]


def _range_bytes(prefix: bytes, key_types: tuple[FieldType, ...], r: ResolvedRange) -> tuple[bytes, bytes | None]:
    """Byte interval ``[lo, hi)`` of the keys in ``r`` under ``prefix``."""
    lo = prefix
    if r.start is not None:
        enc = encode_key(key_types, r.start)
        lo = prefix + enc if r.start_inclusive else prefix + (prefix_successor(enc) or enc)
    end_all = prefix_successor(prefix)
    hi = end_all
    if r.end is not None:
        enc = encode_key(key_types, r.end)
        if r.end_inclusive:
            succ = prefix_successor(enc)
            hi = end_all if succ is None else prefix + succ
        else:
            hi = prefix + enc
    return lo, hi


# ----------------------------------------------------------------------- transaction
class _Cursor:
    """A scan iterator that refuses to run after its transaction ended."""

    def __init__(self, tx: KvTransaction, rows: Iterator[Stored]) -> None:
        self._tx = tx
        self._rows = rows

    def __iter__(self) -> _Cursor:
        return self

    def __next__(self) -> Stored:
        if self._tx.ended:
            raise KvError("this scan's transaction has ended; scans are valid only inside their transaction")
        return next(self._rows)

    def close(self) -> None:
        """Drop the underlying store iterators."""
        close = getattr(self._rows, "close", None)
        if close is not None:
            close()


class KvTransaction(TransactionBase):
    """A transaction over an exclusive store session with a write buffer."""

    def __init__(self, session: StoreSession) -> None:
        super().__init__()
        self._session = session
        # Buffered writes; their keys are kept sorted only once a scan needs them,
        # so write-only transactions (bulk loads) pay a dict insert per write.
        self._writes: dict[bytes, bytes | None] = {}
        self._sorted: SortedList | None = None
        self._range_deletes: list[tuple[bytes, bytes]] = []
        self._cursors: weakref.WeakSet[_Cursor] = weakref.WeakSet()
        self._layouts: dict[str, Layout] = {}
        self.ended = False

    # -- raw access with read-your-writes ---------------------------------------
    def get(self, key: bytes) -> bytes | None:
        """The value under ``key`` as this transaction sees it."""
        writes = self._writes
        if writes and key in writes:
            return writes[key]
        return self._session.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        """Buffer a write (None: a delete)."""
        if self._sorted is not None and key not in self._writes:
            self._sorted.add(key)
        self._writes[key] = value

    def remove(self, key: bytes) -> None:
        """Buffer a delete."""
        self.put(key, None)

    def delete_prefix(self, prefix: bytes) -> None:
        """Delete every key under ``prefix`` at commit (used for drops, never read after)."""
        hi = prefix_successor(prefix)
        assert hi is not None
        self._range_deletes.append((prefix, hi))
        for k in list(self._sorted_writes().irange(prefix, hi, inclusive=(True, False))):
            del self._writes[k]
            self._sorted_writes().remove(k)

    def _sorted_writes(self) -> SortedList:
        if self._sorted is None:
            self._sorted = SortedList(self._writes)
        return self._sorted

    def iterate(self, lo: bytes, hi: bytes | None, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Items in ``[lo, hi)`` merged with this transaction's writes."""
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

    def cursor(self, rows: Iterator[Stored]) -> _Cursor:
        """Wrap a scan so it is closed when the transaction ends."""
        c = _Cursor(self, rows)
        self._cursors.add(c)
        return c

    # -- catalog -----------------------------------------------------------------
    def layout(self, name: str) -> Layout:
        """The stored layout of table ``name`` (TableNotFoundError if missing)."""
        cached = self._layouts.get(name)
        if cached is not None:
            return cached
        raw = self.get(_catalog_key(name))
        if raw is None:
            raise TableNotFoundError(f"table {name!r} does not exist")
        entry = msgpack.unpackb(raw, raw=False)
        layout = Layout(TableSpec.from_dict(entry["spec"]), entry["layout"], entry["id"])
        self._layouts[name] = layout
        return layout

    def save_layout(self, layout: Layout) -> None:
        """Write a catalog entry."""
        entry = {"spec": layout.spec.to_dict(), "id": layout.table_id, "layout": layout.columns}
        self.put(_catalog_key(layout.spec.name), _pack(entry))
        self._layouts[layout.spec.name] = layout

    def forget_layout(self, name: str) -> None:
        """Remove a catalog entry."""
        self.remove(_catalog_key(name))
        self._layouts.pop(name, None)

    # -- lifecycle -----------------------------------------------------------------
    def _open_table(self, name: str) -> TableBase:
        return KvTable(self, self.layout(name))

    def _finish(self) -> None:
        self.ended = True
        for c in list(self._cursors):
            c.close()
        self._cursors = weakref.WeakSet()

    def _commit(self) -> None:
        try:
            self._finish()
            if self._writes or self._range_deletes:
                self._session.commit(self._range_deletes, list(self._writes.items()))
        finally:
            self._session.release()

    def _rollback(self) -> None:
        try:
            self._finish()
        finally:
            self._session.release()


# ----------------------------------------------------------------------------- table
class KvTable(TableBase):
    """Table operations over the ordered store layout."""

    def __init__(self, tx: KvTransaction, layout: Layout) -> None:
        super().__init__(layout.spec)
        self._tx = tx
        self._layout = layout
        self._last_key: tuple[Any, ...] | None = None
        self._last_encoded = b""

    def _encoded(self, key: tuple[Any, ...]) -> bytes:
        # A write usually follows a read of the same key tuple: encode it once.
        if key is not self._last_key:
            self._last_key, self._last_encoded = key, encode_key(self._layout.key_types, key)
        return self._last_encoded

    def _get(self, key: tuple[Any, ...]) -> Stored | None:
        raw = self._tx.get(self._layout.row_prefix + self._encoded(key))
        return None if raw is None else self._layout.decode_row(raw)

    def _put(self, key: tuple[Any, ...], values: dict[str, Any], version: int, old: Stored | None) -> None:
        lay = self._layout
        enc = self._encoded(key)
        for column in self.spec.indexes:
            new_value = values[column]
            if old is not None:
                old_value = old.values[column]
                if old_value == new_value and type(old_value) is type(new_value):
                    continue
                self._tx.remove(lay.index_key(column, old_value, enc))
            self._tx.put(lay.index_key(column, new_value, enc), b"")
        self._tx.put(lay.row_prefix + enc, lay.encode_row(values, version))

    def _remove(self, key: tuple[Any, ...], old: Stored) -> None:
        lay = self._layout
        enc = self._encoded(key)
        for column in self.spec.indexes:
            self._tx.remove(lay.index_key(column, old.values[column], enc))
        self._tx.remove(lay.row_prefix + enc)

    # -- scanning ------------------------------------------------------------------
    def _scan(self, request: ScanRequest) -> Iterator[Stored]:
        plan = plan_scan(
            self.spec, request.key_range, request.where, order_by=request.order_by, descending=request.descending
        )
        rows = self._rows(plan, request.after)
        if request.limit is not None:
            rows = islice(rows, request.limit)
        return self._tx.cursor(rows)

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
        residual = plan.residual
        return (r for r in rows if matches(residual, r.values))

    def _key_rows(self, key_range: ResolvedRange, descending: bool, after: bytes | None) -> Iterator[Stored]:
        lay = self._layout
        lo, hi = _range_bytes(lay.row_prefix, lay.key_types, key_range)
        if after is not None:
            if descending:
                bound = lay.row_prefix + after
                hi = bound if hi is None else min(hi, bound)
            else:
                lo = max(lo, lay.row_prefix + after + b"\x00")
        if hi is not None and lo >= hi:
            return
        decode = lay.decode_row
        for _, value in self._tx.iterate(lo, hi, descending):
            yield decode(value)

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
                    )
                    for r in runs
                ]
                return heapq.merge(*streams, key=lambda e: e[1], reverse=plan.descending)
            ordered = runs[::-1] if plan.descending else runs
            start = None if after is None else prefix + after
            return (
                e
                for r in ordered
                for e in self._entries_in(prefix + r, prefix_successor(prefix + r), plan.descending, start, n, ftype)
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
        self, lo: bytes, hi: bytes | None, descending: bool, after: bytes | None, n: int, ftype: FieldType
    ) -> Iterator[tuple[bytes, bytes]]:
        if after is not None:
            if descending:
                hi = after if hi is None else min(hi, after)
            else:
                lo = max(lo, after + b"\x00")
        if hi is not None and lo >= hi:
            return
        for k, _ in self._tx.iterate(lo, hi, descending):
            position = k[n:]
            _, end = decode_nullable(ftype, position)
            yield position, position[end:]

    def _index_rows(self, plan: Plan, after: bytes | None) -> Iterator[Stored]:
        assert plan.index is not None
        lay = self._layout
        # A key-ordered scan resumes by key; the entries carry the key after the value.
        entries = self._index_entries(plan.index, plan, after)
        lo, hi = _range_bytes(b"", lay.key_types, plan.key_range)
        everything = plan.key_range == ResolvedRange.everything()
        for _, enc in entries:
            if not everything and (enc < lo or (hi is not None and enc >= hi)):
                continue
            raw = self._tx.get(lay.row_prefix + enc)
            if raw is not None:
                yield lay.decode_row(raw)

    def _key_column_order(self, plan: Plan, after: bytes | None) -> Iterator[Stored]:
        """Order by a key column other than the first: merge one sorted run per
        distinct prefix of the key columns before it (memory grows with their count)."""
        assert plan.order_by is not None
        spec, lay = self.spec, self._layout
        depth = spec.primary_key.index(plan.order_by)
        lo, hi = _range_bytes(lay.row_prefix, lay.key_types, plan.key_range)
        prefixes: list[tuple[Any, ...]] = []
        pos = lo
        n = len(lay.row_prefix)
        while True:
            item = next(self._tx.iterate(pos, hi, False), None)
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
    def _count(self, key_range: ResolvedRange, where: Expr | None) -> int:
        plan = plan_scan(self.spec, key_range, where, ordered=False)
        if plan.empty:
            return 0
        if plan.residual is None and plan.index is None:
            lo, hi = _range_bytes(self._layout.row_prefix, self._layout.key_types, plan.key_range)
            return sum(1 for _ in self._tx.iterate(lo, hi, False))
        return sum(1 for _ in self._rows(plan, None))

    def _split(self, n: int) -> list[Range]:
        lay = self._layout
        lo, hi = lay.row_prefix, prefix_successor(lay.row_prefix)
        sample: list[bytes] = []
        step, seen = 1, 0
        for k, _ in self._tx.iterate(lo, hi, False):
            if seen % step == 0:
                sample.append(k)
                if len(sample) >= 4096:
                    sample = sample[::2]
                    step *= 2
            seen += 1
        if n <= 1 or len(sample) < 2:
            return [Range()]
        cuts = sorted({sample[len(sample) * i // n] for i in range(1, n)} - {sample[0]})
        keys = [decode_key(lay.key_types, c, len(lay.row_prefix))[0] for c in cuts]
        bounds: list[tuple[Any, ...] | None] = [None, *keys, None]
        return [Range(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]

    def _explain(self, key_range: ResolvedRange, where: Expr | None, order_by: str | None) -> str:
        plan = plan_scan(self.spec, key_range, where, order_by=order_by)
        return plan.describe(self.spec)


def _intersect_prefix(r: ResolvedRange, prefix: tuple[Any, ...]) -> ResolvedRange:
    """The part of ``r`` whose keys start with ``prefix`` (bounds compared by prefix)."""
    start, start_inc = prefix, True
    if r.start is not None and r.start[: len(prefix)] == prefix and len(r.start) > len(prefix):
        start, start_inc = r.start, r.start_inclusive
    end, end_inc = prefix, True
    if r.end is not None and r.end[: len(prefix)] == prefix and len(r.end) > len(prefix):
        end, end_inc = r.end, r.end_inclusive
    return ResolvedRange(start, start_inc, end, end_inc)


# ----------------------------------------------------------------------------- admin
class KvAdmin(Admin):
    """Catalog operations, each in its own transaction."""

    def __init__(self, provider: KvProvider) -> None:
        self._provider = provider

    def _tx(self) -> KvTransaction:
        return self._provider.transaction()

    def create(self, spec: TableSpec) -> None:
        """Create a table; TableExistsError if it exists."""
        _check_spec(spec)
        with self._tx() as tx:
            if tx.get(_catalog_key(spec.name)) is not None:
                raise TableExistsError(f"table {spec.name!r} already exists")
            _create_in(tx, spec)

    def create_or_update(self, spec: TableSpec) -> None:
        """Create, no-op for an equal spec, or apply a compatible change."""
        _check_spec(spec)
        with self._tx() as tx:
            if tx.get(_catalog_key(spec.name)) is None:
                _create_in(tx, spec)
                return
            old = tx.layout(spec.name)
            change = plan_schema_change(old.spec, spec)
            if change.empty:
                return
            layout = Layout(spec, old.columns + [f.name for f in change.added_fields], old.table_id)
            for column in change.dropped_indexes:
                tx.delete_prefix(old.index_prefix(column))
            tx.save_layout(layout)
            if change.added_indexes:
                lo, hi = layout.row_prefix, prefix_successor(layout.row_prefix)
                for k, raw in tx.iterate(lo, hi, False):
                    row = layout.decode_row(raw)
                    enc = k[len(layout.row_prefix) :]
                    for column in change.added_indexes:
                        tx.put(layout.index_key(column, row.values[column], enc), b"")

    def exists(self, name: str) -> bool:
        """True if table ``name`` exists."""
        with self._tx() as tx:
            return tx.get(_catalog_key(name)) is not None

    def get_spec(self, name: str) -> TableSpec:
        """The spec of table ``name``."""
        with self._tx() as tx:
            return tx.layout(name).spec

    def list_tables(self) -> list[str]:
        """Every table name, sorted by code point."""
        with self._tx() as tx:
            names = [
                k[len(CATALOG) :].decode("utf-8") for k, _ in tx.iterate(CATALOG, prefix_successor(CATALOG), False)
            ]
        return sorted(names)

    def drop(self, name: str, *, missing_ok: bool = False) -> None:
        """Drop table ``name`` and all its rows and index entries."""
        with self._tx() as tx:
            if tx.get(_catalog_key(name)) is None:
                if missing_ok:
                    return
                raise TableNotFoundError(f"table {name!r} does not exist")
            layout = tx.layout(name)
            tx.forget_layout(name)
            tx.delete_prefix(layout.prefix)

    def verify(self, name: str) -> list[str]:
        """Check every row decodes and every index entry matches its row (both ways)."""
        problems: list[str] = []
        limit = 100
        with self._tx() as tx:
            lay = tx.layout(name)
            spec = lay.spec
            n = len(lay.row_prefix)
            expected = 0
            for k, raw in tx.iterate(lay.row_prefix, prefix_successor(lay.row_prefix), False):
                try:
                    key, end = decode_key(lay.key_types, k, n)
                    if end != len(k):
                        raise ValueError("trailing bytes after the key")
                    row = lay.decode_row(raw)
                    if tuple(row.values[c] for c in spec.primary_key) != key:
                        raise ValueError("stored key columns differ from the key")
                except Exception as exc:
                    problems.append(f"row {k[n:].hex()}: cannot decode ({exc})")
                    continue
                for column in spec.indexes:
                    expected += 1
                    if tx.get(lay.index_key(column, row.values[column], k[n:])) is None:
                        problems.append(f"row {key!r}: index {column!r} has no entry for value {row.values[column]!r}")
                if len(problems) >= limit:
                    return problems
            for column in spec.indexes:
                prefix = lay.index_prefix(column)
                ftype = spec.type_of(column)
                for k, _ in tx.iterate(prefix, prefix_successor(prefix), False):
                    try:
                        value, pos = decode_nullable(ftype, k, len(prefix))
                        stored = tx.get(lay.row_prefix + k[pos:])
                        if stored is None:
                            problems.append(f"index {column!r}: entry for value {value!r} points to a missing row")
                        elif lay.decode_row(stored).values[column] != value:
                            problems.append(f"index {column!r}: entry for value {value!r} does not match its row")
                    except Exception as exc:
                        problems.append(f"index {column!r}: undecodable entry {k.hex()} ({exc})")
                    if len(problems) >= limit:
                        return problems
        return problems


def _create_in(tx: KvTransaction, spec: TableSpec) -> None:
    raw = tx.get(NEXT_ID)
    table_id = 1 if raw is None else int(msgpack.unpackb(raw))
    tx.put(NEXT_ID, _pack(table_id + 1))
    tx.save_layout(Layout(spec, list(spec.columns), table_id))


def _check_spec(spec: Any) -> None:
    if not isinstance(spec, TableSpec):
        raise SchemaError(f"expected a TableSpec, got {type(spec).__name__}")
    validate_name(spec.name, "table")


# -------------------------------------------------------------------------- provider
class KvProvider(ProviderBase):
    """A provider over an :class:`OrderedStore`; subclasses supply the store."""

    def __init__(self, url: str, store: OrderedStore) -> None:
        super().__init__(url)
        self._store = store
        self._admin = KvAdmin(self)
        self._closed = False

    @property
    def admin(self) -> KvAdmin:
        """Table management."""
        return self._admin

    def transaction(self) -> KvTransaction:
        """A new serializable transaction (waits for exclusive access)."""
        if self._closed:
            raise KvError(f"provider {self.url} is closed")
        return KvTransaction(self._store.session())

    def close(self) -> None:
        """Release the store."""
        if not self._closed:
            self._closed = True
            self._store.close()


__all__ = ["KvProvider", "KvTransaction", "Layout", "OrderedStore", "StoreSession"]
