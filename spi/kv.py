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

import functools
import heapq
import struct
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from itertools import islice, repeat, starmap
from operator import itemgetter
from typing import Any, TypeVar

import msgspec
from sortedcontainers import SortedList

from spi.codec import (
    decode_key,
    decode_nullable,
    encode_key,
    encode_nullable,
    from_micros,
    key_encoder,
    nullable_encoder,
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
from spi.keys import Range, ResolvedRange, key_of, quantile_cuts, ranges_between
from spi.kvbulk import KvLoadPreparer, RowBatch
from spi.planner import Plan, plan_scan
from spi.provider import Admin, ProviderBase, TransactionBase
from spi.row import Row
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
_FIRST_FETCH = 16
T = TypeVar("T")


class StoreSession(ABC):
    """Exclusive access to an ordered byte store for one transaction."""

    @abstractmethod
    def get(self, key: bytes) -> bytes | None:
        """The value stored under ``key``."""

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """The values stored under ``keys``, in order (stores may batch the lookups)."""
        return [self.get(k) for k in keys]

    @abstractmethod
    def iterate(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        """Items with ``lo <= key < hi`` (``hi`` None: no upper bound), in key order
        or reversed."""

    def values(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[bytes]:
        """The values of :meth:`iterate` (stores may skip fetching the keys)."""
        return (v for _, v in self.iterate(lo, hi, reverse))

    @abstractmethod
    def commit(self, range_deletes: list[tuple[bytes, bytes]], keys: list[bytes], values: list[bytes | None]) -> None:
        """Atomically delete the ranges ``[lo, hi)``, then write ``values[i]`` under
        ``keys[i]`` (None deletes); the keys are distinct and in order."""

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
        self.encode_key = key_encoder(spec.key_types)
        self.timestamps = [c for c in columns if spec.type_of(c) is FieldType.TIMESTAMP]
        self.index_ids = {c: columns.index(c) for c in spec.indexes}
        self.indexes = [(c, self.index_prefix(c), nullable_encoder(spec.type_of(c))) for c in spec.indexes]
        self._encoders = {c: encoder for c, _, encoder in self.indexes}
        self._get_all = itemgetter(*columns) if len(columns) > 1 else lambda values: (values[columns[0]],)
        build = _dict_builder(len(columns))(*columns)
        self.values_of: Callable[[list[Any]], dict[str, Any]] = (
            build if not self.timestamps else lambda raw: self._from_micros(build(raw))
        )
        """The column values of an unpacked stored row (columns added later read as null)."""
        # A layout belongs to one transaction (one thread), so it may own an encoder.
        self._pack = msgspec.msgpack.Encoder().encode

    @property
    def signature(self) -> tuple[Any, ...]:
        """What rows encoded for this layout depend on (see :mod:`spi.kvbulk`)."""
        return (self.table_id, tuple(self.columns), self.spec)

    def load_preparer(self) -> KvLoadPreparer:
        """A new bulk-load preparer for this layout (see :mod:`spi.kvbulk`)."""
        indexes = [(c, prefix) for c, prefix, _ in self.indexes]
        return KvLoadPreparer(self.spec, self.columns, self.row_prefix, indexes, self.signature)

    def index_prefix(self, column: str) -> bytes:
        """Byte prefix of every entry of the index on ``column``."""
        return self.prefix + INDEX + _U16.pack(self.index_ids[column])

    def encode_row(self, values: dict[str, Any], version: int) -> bytes:
        """The stored form of a full row: msgpack ``[version, value...]``."""
        if self.timestamps:
            values = {**values, **{c: to_micros(values[c]) for c in self.timestamps if values[c] is not None}}
        return self._pack((version, *self._get_all(values)))

    def _from_micros(self, values: dict[str, Any]) -> dict[str, Any]:
        for c in self.timestamps:
            if values[c] is not None:
                values[c] = from_micros(values[c])
        return values

    def decode_row(self, data: bytes) -> Stored:
        """Inverse of :meth:`encode_row`."""
        raw = _unpack(data)
        return Stored(self.values_of(raw), raw[0])

    def index_key(self, column: str, value: Any, encoded_key: bytes) -> bytes:
        """Store key of one index entry."""
        return self.index_prefix(column) + self._encoders[column](value) + encoded_key


@functools.lru_cache(maxsize=64)
def _dict_builder(n: int) -> Callable[..., Callable[[list[Any]], dict[str, Any]]]:
    """``make(*columns)`` returning ``build(raw)`` = ``{columns[i]: raw[i + 1]}``, with
    ``raw`` padded with nulls when it is short.

    Generated (as :func:`collections.namedtuple` does) because a dict display runs
    about twice as fast as ``dict(zip(...))`` and every row read goes through it. The
    source holds only generated names and numbers, never a column name.
    """
    names = [f"c{i}" for i in range(n)]
    items = ", ".join(f"{c}: r[{i + 1}]" for i, c in enumerate(names))
    source = (
        f"def make({', '.join(names)}):\n"
        f"    def build(r):\n"
        f"        if len(r) <= {n}:\n"
        f"            r = r + [None] * ({n + 1} - len(r))\n"
        f"        return {{{items}}}\n"
        f"    return build\n"
    )
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return namespace["make"]  # type: ignore[no-any-return]


def _catalog_key(name: str) -> bytes:
    return CATALOG + name.encode("utf-8")


_pack = msgspec.msgpack.encode
_unpack = msgspec.msgpack.decode


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
def _ended() -> KvError:
    return KvError("this scan's transaction has ended; scans are valid only inside their transaction")


class _Cursor:
    """A scan iterator that refuses to run after its transaction ended."""

    def __init__(self, tx: KvTransaction, rows: Iterator[Stored]) -> None:
        self._tx = tx
        self._rows = rows

    def __iter__(self) -> _Cursor:
        return self

    def __next__(self) -> Stored:
        if self._tx.ended:
            raise _ended()
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

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """The values under ``keys`` as this transaction sees them, in order.

        When no stored key lies between the smallest and the largest of the keys
        not written by this transaction (appends, loads into an empty stretch),
        one seek shows that none of them exists and the lookups are skipped.
        """
        writes = self._writes
        if not writes:
            if keys and self._any_stored(min(keys), max(keys)):
                return self._session.get_many(keys)
            return [None] * len(keys)
        pending = [k for k in keys if k not in writes]
        stored: dict[bytes, bytes | None] = {}
        if pending and self._any_stored(min(pending), max(pending)):
            stored = dict(zip(pending, self._session.get_many(pending)))
        return [writes[k] if k in writes else stored.get(k) for k in keys]

    def _any_stored(self, lo: bytes, last: bytes) -> bool:
        """True if the store holds a key in ``[lo, last]``."""
        items = self._session.iterate(lo, last + b"\x00", False)
        try:
            return next(items, None) is not None
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def values(self, lo: bytes, hi: bytes | None, reverse: bool = False) -> Iterator[bytes]:
        """The values of :meth:`iterate` (straight from the store when nothing is buffered)."""
        if not self._writes:
            return self._session.values(lo, hi, reverse)
        return (v for _, v in self.iterate(lo, hi, reverse))

    def put(self, key: bytes, value: bytes | None) -> None:
        """Buffer a write (None: a delete)."""
        if self._sorted is not None and key not in self._writes:
            self._sorted.add(key)
        self._writes[key] = value

    def put_many(self, keys: list[bytes], values: Iterable[bytes]) -> None:
        """Buffer the writes of ``values`` under ``keys`` (bulk loads)."""
        if self._sorted is not None:
            self._sorted.update(k for k in keys if k not in self._writes)
        self._writes.update(zip(keys, values))

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
        entry = _unpack(raw)
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
            writes = self._writes
            if writes or self._range_deletes:
                # In key order: RocksDB inserts a sorted batch several times faster.
                keys = sorted(writes)
                self._session.commit(self._range_deletes, keys, list(map(writes.__getitem__, keys)))
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
            self._last_key, self._last_encoded = key, self._layout.encode_key(key)
        return self._last_encoded

    def _get(self, key: tuple[Any, ...]) -> Stored | None:
        raw = self._tx.get(self._layout.row_prefix + self._encoded(key))
        return None if raw is None else self._layout.decode_row(raw)

    def _get_many(self, keys: list[tuple[Any, ...]]) -> list[Stored | None]:
        lay = self._layout
        prefix, encode, decode = lay.row_prefix, lay.encode_key, lay.decode_row
        raws = self._tx.get_many([prefix + encode(k) for k in keys])
        return [None if raw is None else decode(raw) for raw in raws]

    def _put(self, key: tuple[Any, ...], values: dict[str, Any], version: int, old: Stored | None) -> None:
        lay = self._layout
        enc = self._encoded(key)
        put = self._tx.put
        for column, prefix, encode in lay.indexes:
            new_value = values[column]
            if old is not None:
                old_value = old.values[column]
                if old_value == new_value and type(old_value) is type(new_value):
                    continue
                put(prefix + encode(old_value) + enc, None)
            put(prefix + encode(new_value) + enc, b"")
        put(lay.row_prefix + enc, lay.encode_row(values, version))

    def _load_preparer(self) -> KvLoadPreparer:
        return self._layout.load_preparer()

    def _load_batch(self, batch: RowBatch, mode: str) -> None:
        """Bulk path: an encoded batch goes straight into the write buffer, except rows
        whose keys exist (the generic per-row path writes those). A batch only
        validated, one that repeats a key or one encoded for a layout that has changed
        since takes the generic path whole."""
        lay, tx, keys = self._layout, self._tx, batch.keys
        stored = batch.stored
        if stored is None or batch.signature != lay.signature or len(set(keys)) != len(keys):
            super()._load_batch(batch.all_rows(), mode)
            return
        olds = tx.get_many(keys)
        if olds.count(None) == len(olds):
            # Rows first: a load usually comes in key order, which the sort at commit uses.
            tx.put_many(keys, stored)
            for entries in batch.entries:
                tx.put_many(entries, repeat(b""))
            return
        write = {"upsert": self._upsert_at, "insert": self._insert_at, "replace": self._replace_at}[mode]
        for i, old in enumerate(olds):
            if old is None:
                tx.put(keys[i], stored[i])
                for entries in batch.entries:
                    tx.put(entries[i], b"")
            else:
                values = batch.row(i)
                write(key_of(self.spec, values), values, lay.decode_row(old))

    def _remove(self, key: tuple[Any, ...], old: Stored) -> None:
        lay = self._layout
        enc = self._encoded(key)
        for column, prefix, encode in lay.indexes:
            self._tx.remove(prefix + encode(old.values[column]) + enc)
        self._tx.remove(lay.row_prefix + enc)

    # -- scanning ------------------------------------------------------------------
    def _scan(self, request: ScanRequest) -> Iterator[Stored]:
        return self._stream(request, Stored)

    def _scan_rows(self, request: ScanRequest) -> Iterator[Row]:
        return self._stream(request, Row.adopt)

    def _stream(self, request: ScanRequest, make: Callable[[dict[str, Any], int], T]) -> Iterator[T]:
        """The rows of ``request``, each as ``make(values, version)``."""
        plan = plan_scan(
            self.spec, request.key_range, request.where, order_by=request.order_by, descending=request.descending
        )
        if plan.empty:
            return iter(())
        # The common cases: one generator over the store builds the rows.
        if plan.index is None and plan.order_by is None:
            return self._key_rows(plan.key_range, plan.descending, request.after, plan.residual, request.limit, make)
        if plan.index is not None and plan.residual is None:
            found = self._index_rows(plan, request.after, make)
            return found if request.limit is None else islice(found, request.limit)
        rows = self._rows(plan, request.after)
        if request.limit is not None:
            rows = islice(rows, request.limit)
        cursor = self._tx.cursor(rows)
        return cursor if make is Stored else starmap(make, cursor)  # type: ignore[return-value]

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

    def _key_rows(
        self,
        key_range: ResolvedRange,
        descending: bool,
        after: bytes | None,
        where: Expr | None = None,
        limit: int | None = None,
        make: Callable[[dict[str, Any], int], Any] = Stored,
    ) -> Iterator[Any]:
        """Rows in key order matching ``where``, at most ``limit``, as ``make(values, version)``."""
        lay = self._layout
        lo, hi = _range_bytes(lay.row_prefix, lay.key_types, key_range)
        if after is not None:
            if descending:
                bound = lay.row_prefix + after
                hi = bound if hi is None else min(hi, bound)
            else:
                lo = max(lo, lay.row_prefix + after + b"\x00")
        if (hi is not None and lo >= hi) or limit == 0:
            return
        tx, unpack, values_of = self._tx, _unpack, lay.values_of
        stored = tx.values(lo, hi, descending)
        n = 0
        while True:
            if tx.ended:  # checked before the store is touched again
                raise _ended()
            data = next(stored, None)
            if data is None:
                return
            raw = unpack(data)
            values = values_of(raw)
            if where is not None and not matches(where, values):
                continue
            yield make(values, raw[0])
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
            for k, _ in self._tx.iterate(lo, hi, descending):
                yield k[n:], k[n + width :]
            return
        for k, _ in self._tx.iterate(lo, hi, descending):
            position = k[n:]
            _, end = decode_nullable(ftype, position)
            yield position, position[end:]

    def _index_rows(
        self, plan: Plan, after: bytes | None, make: Callable[[dict[str, Any], int], Any] = Stored
    ) -> Iterator[Any]:
        """The rows an index scan finds, as ``make(values, version)``."""
        assert plan.index is not None
        lay = self._layout
        # A key-ordered scan resumes by key; the entries carry the key after the value.
        entries = self._index_entries(plan.index, plan, after)
        lo, hi = _range_bytes(b"", lay.key_types, plan.key_range)
        everything = plan.key_range == ResolvedRange.everything()
        tx, prefix, unpack, values_of = self._tx, lay.row_prefix, _unpack, lay.values_of
        # The rows of a run of entries are fetched together (one multi-get), in runs
        # that grow so that a short scan fetches little.
        size = _FIRST_FETCH
        while True:
            if tx.ended:
                raise _ended()
            run = list(islice(entries, size))
            keys = [prefix + enc for _, enc in run if everything or (lo <= enc and (hi is None or enc < hi))]
            for data in tx.get_many(keys):
                if tx.ended:
                    raise _ended()
                if data is not None:
                    raw = unpack(data)
                    yield make(values_of(raw), raw[0])
            if len(run) < size:
                return
            size = min(size * 4, _CHUNK)

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
        return ranges_between([decode_key(lay.key_types, c, len(lay.row_prefix))[0] for c in quantile_cuts(sample, n)])

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
    table_id = 1 if raw is None else int(_unpack(raw))
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
