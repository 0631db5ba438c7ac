"""Table operations over the ordered-store layout: point reads and writes keep a
row and its index entries together; scans go to :class:`spi.kv.scan.Scanner`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from typing import Any, NamedTuple

from spi.checksum import row_hasher
from spi.clock import now_micros
from spi.codec import prefix_successor
from spi.filters import Expr, bind
from spi.kept import write_kept
from spi.keys import Range, ResolvedRange, key_of, resolve_range
from spi.kv.buffer import WriteBuffer
from spi.kv.bulk import KvLoadPreparer, RowBatch
from spi.kv.feed import OP_DELETE, OP_EXPIRE, delete_event, put_event, put_events
from spi.kv.layout import Layout
from spi.kv.scan import Scanner
from spi.primitives import Kept, ScanRequest, Stored
from spi.row import Row
from spi.table import TableBase


class StoredPage(NamedTuple):
    """A page of a table's stored row values in key order (expired ones included),
    the layout they were read with, and the encoded key to continue after (None:
    the scan is done)."""

    values: list[bytes]
    layout: Layout
    after: bytes | None


DELETE_CHUNK = 10_000
"""Rows a ``delete_range`` reads before it deletes them."""
SPILL_AT = 100_000
"""Buffered writes and events at which a spilling range write moves them to disk."""


class KvTable(TableBase):
    """One table in one transaction of the ordered-store engine."""

    # Defaults a one-off call mostly keeps (set here, not per handle).
    _scanner_made: Scanner | None = None
    _last_key: tuple[Any, ...] | None = None
    _last_encoded = b""
    _last_read: tuple[Stored, bytes] | None = None  # a fed table's last row read, and its bytes

    def __init__(self, buffer: WriteBuffer, layout: Layout) -> None:
        super().__init__(layout.spec)
        self._buffer = buffer
        self._layout = layout
        # The transaction's change-feed events, for a change-fed table only: a table
        # without a feed pays one test per write.
        self._events = buffer.events if layout.spec.changes else None

    @property
    def _scanner(self) -> Scanner:
        # Made on first use: most one-off calls never scan.
        if self._scanner_made is None:
            self._scanner_made = Scanner(self._buffer, self._layout)
        return self._scanner_made

    def _encoded(self, key: tuple[Any, ...]) -> bytes:
        # A write usually follows a read of the same key tuple: encode it once.
        if key is not self._last_key:
            self._last_key, self._last_encoded = key, self._layout.encode_key(key)
        return self._last_encoded

    def _clock(self) -> int:
        """Now on the clock of the buffer (the provider's clock, :mod:`spi.clock`), in
        microseconds since the epoch."""
        return now_micros(self._buffer.clock)

    def _get(self, key: tuple[Any, ...]) -> Stored | None:
        raw = self._buffer.get(self._layout.row_prefix + self._encoded(key))
        if raw is None:
            return None
        stored = self._layout.decode_row(raw)
        if self._events is not None:
            self._last_read = (stored, raw)
        return stored

    def _stored_bytes(self, old: Stored) -> bytes:
        """The bytes ``old`` was read from (an event's ``prev``): those the last read
        kept when it is that row (a write's usual case), else encoded again."""
        last = self._last_read
        if last is not None and last[0] is old:
            return last[1]
        return self._layout.encode_row(old.values, old.version, old.expires)

    def _get_many(self, keys: list[tuple[Any, ...]]) -> list[Stored | None]:
        lay = self._layout
        prefix, encode, decode = lay.row_prefix, lay.encode_key, lay.decode_row
        raws = self._buffer.get_many([prefix + encode(k) for k in keys])
        return [None if raw is None else decode(raw) for raw in raws]

    def _put(
        self, key: tuple[Any, ...], values: dict[str, Any], version: int, old: Stored | None, expires: int | None
    ) -> None:
        lay = self._layout
        enc = self._encoded(key)
        put = self._buffer.put
        if old is not None and old.expires is not None and old.expires != expires:
            put(lay.expiry_key(old.expires, enc), None)
        if expires is not None:
            put(lay.expiry_key(expires, enc), b"")
        for column, prefix, encode in lay.indexes:
            new_value = values[column]
            if old is not None:
                old_value = old.values[column]
                if old_value == new_value and type(old_value) is type(new_value):
                    continue
                put(prefix + encode(old_value) + enc, None)
            put(prefix + encode(new_value) + enc, b"")
        row_key, stored = lay.row_prefix + enc, lay.encode_row(values, version, expires)
        if old is None:
            deltas = self._buffer.row_deltas
            deltas[lay.count_key] = deltas.get(lay.count_key, 0) + 1
        put(row_key, stored)
        if self._events is not None:
            self._events.append(put_event(row_key, stored, None if old is None else self._stored_bytes(old)))

    def _load_preparer(self) -> KvLoadPreparer:
        return self._layout.load_preparer()

    def _load_batch(self, batch: RowBatch, mode: str, expires: int | None) -> None:
        """Bulk path: an encoded batch goes straight into the write buffer, except rows
        whose keys exist (the generic per-row path writes those). A batch only
        validated, one that repeats a key or one encoded for a layout that has changed
        since takes the generic path whole."""
        if not self._encoded_fits(batch):
            super()._load_batch(batch.all_rows(), mode, expires)
            return
        write = {"upsert": self._upsert_at, "insert": self._insert_at, "replace": self._replace_at}[mode]
        stored = batch.stored if expires is None else batch.stored_expiring(expires)
        assert stored is not None
        self._load_encoded(
            batch,
            stored,
            None if expires is None else repeat(expires),
            mode,
            lambda i, key, values, old: write(key, values, old, expires),
        )

    def _load_kept(self, batch: RowBatch, mode: str, kept: Kept) -> None:
        """:meth:`_load_batch` with each row at its kept version and expiry."""
        if not self._encoded_fits(batch):
            super()._load_kept(batch.all_rows(), mode, kept)
            return
        versions, expiries = kept.versions, kept.expires
        self._load_encoded(
            batch,
            batch.stored_at(versions, expiries),
            expiries,
            mode,
            lambda i, key, values, old: write_kept(self, key, values, versions[i], expiries[i], old, mode),
        )

    def _encoded_fits(self, batch: RowBatch) -> bool:
        """True when the bulk path can write ``batch``: encoded for this layout, no key twice."""
        keys = batch.keys
        if batch.stored is None or batch.signature != self._layout.signature:
            return False
        return batch.ordered or len(set(keys)) == len(keys)

    def _load_encoded(
        self,
        batch: RowBatch,
        stored: list[bytes],
        expiries: Iterable[int | None] | None,
        mode: str,
        write: Callable[[int, tuple[Any, ...], dict[str, Any], Stored], object],
    ) -> None:
        """Put the encoded rows ``stored`` (expiring as ``expiries`` says; None: none
        expires) whose keys are new; ``write(i, key, values, old)`` row ``i`` whose key
        holds a live row (an insert fails whole first)."""
        lay, buffer, keys = self._layout, self._buffer, batch.keys
        raws = buffer.get_many(keys, ordered=batch.ordered)
        if raws.count(None) == len(raws):  # the common case, all new: nothing to decode
            olds: list[Stored | None] = raws  # type: ignore[assignment]
            expired: list[int] = []
        else:
            olds = [None if raw is None else self._live(lay.decode_row(raw)) for raw in raws]
            expired = [i for i, raw in enumerate(raws) if raw is not None and olds[i] is None]
        if mode == "insert" and olds.count(None) != len(olds):  # fails whole, before any write
            first = next(i for i, old in enumerate(olds) if old is not None)
            raise self._exists_error(key_of(self.spec, batch.row(first)))
        for i in expired:  # swept first, as a write that meets them does
            raw = raws[i]
            assert raw is not None
            self._last_read = (gone := lay.decode_row(raw), raw)
            self._remove(key_of(self.spec, batch.row(i)), gone, expired=True)
        events = self._events
        prefix = len(lay.row_prefix)
        added = olds.count(None)
        deltas = buffer.row_deltas
        deltas[lay.count_key] = deltas.get(lay.count_key, 0) + added
        if added == len(olds):
            # Rows first: a load usually comes in key order, which the sort at commit uses.
            buffer.put_many(keys, stored, ordered=batch.ordered)
            for entries in batch.entries:
                buffer.put_many(entries, repeat(b""))
            if expiries is not None:
                entries = [lay.expiry_key(e, k[prefix:]) for k, e in zip(keys, expiries) if e is not None]
                buffer.put_many(entries, repeat(b""))
            if events is not None:
                events.append(put_events(keys, stored))
            return
        for i, (old, expires) in enumerate(zip(olds, repeat(None) if expiries is None else expiries)):
            if old is None:
                buffer.put(keys[i], stored[i])
                for entries in batch.entries:
                    buffer.put(entries[i], b"")
                if expires is not None:
                    buffer.put(lay.expiry_key(expires, keys[i][prefix:]), b"")
                if events is not None:
                    events.append(put_event(keys[i], stored[i], None))
            else:
                values = batch.row(i)
                self._last_read = (old, raws[i])  # type: ignore[assignment]
                write(i, key_of(self.spec, values), values, old)

    def _remove(self, key: tuple[Any, ...], old: Stored, *, expired: bool = False) -> None:
        lay = self._layout
        enc = self._encoded(key)
        for column, prefix, encode in lay.indexes:
            self._buffer.remove(prefix + encode(old.values[column]) + enc)
        if old.expires is not None:
            self._buffer.remove(lay.expiry_key(old.expires, enc))
        self._buffer.remove(lay.row_prefix + enc)
        deltas = self._buffer.row_deltas
        deltas[lay.count_key] = deltas.get(lay.count_key, 0) - 1
        if self._events is not None:
            prev = self._stored_bytes(old)
            self._events.append(delete_event(lay.row_prefix + enc, prev, OP_EXPIRE if expired else OP_DELETE))

    def chunked_load_layout(self) -> Layout | None:
        """The layout a load may write in chunks the store ingests (:mod:`spi.kv.chunked_load`):
        when the store commits sorted streams and the table holds no row (else None)."""
        lay = self._layout
        if not self._buffer.commits_sorted_stream():
            return None
        hi = prefix_successor(lay.row_prefix)
        return lay if next(iter(self._buffer.keys(lay.row_prefix, hi)), None) is None else None

    def spilling(self) -> KvTable:
        """This table, its buffer allowed to spill (:meth:`WriteBuffer.allow_spill`) every
        :data:`SPILL_AT` writes: for an auto-commit range update or delete, which holds
        a batch of rows in memory however many it changes."""
        self._buffer.allow_spill(SPILL_AT)
        return self

    def _matching_chunks(self, rng: Range | None, where: Expr | None, chunk: int = 1000) -> Iterator[list[Stored]]:
        for rows in super()._matching_chunks(rng, where, chunk):
            yield rows
            self._buffer.spill_if_large()  # the chunk is written: none of it is read again

    def delete_range(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """Delete every row in range matching ``where``; rows deleted. A range read in
        key order (no index chosen) deletes each row by the store key it was read
        under, a chunk of :data:`DELETE_CHUNK` at a time, without building the row or
        encoding its key again."""
        request = ScanRequest(resolve_range(self.spec, range), None if where is None else bind(where, self.spec))
        chunks = self._scanner.stored_matches(request, DELETE_CHUNK)
        if chunks is None:
            return super().delete_range(range, where=where)
        lay, buffer, events, n = self._layout, self._buffer, self._events, 0
        start = len(lay.row_prefix)
        for found in chunks:
            keys = [key for key, _, _ in found]
            buffer.put_many(keys, repeat(None, len(keys)), ordered=True)
            for key, data, raw in found:
                enc = key[start:]
                if lay.indexes:
                    values = lay.values_of(raw)
                    for column, prefix, encode in lay.indexes:
                        buffer.remove(prefix + encode(values[column]) + enc)
                head = raw[0]
                if head.__class__ is not int:
                    buffer.remove(lay.expiry_key(head[1], enc))
                if events is not None:
                    events.append(delete_event(key, data, OP_DELETE))
            deltas = buffer.row_deltas
            deltas[lay.count_key] = deltas.get(lay.count_key, 0) - len(found)
            n += len(found)
            buffer.spill_if_large()  # the chunk is written: none of it is read again
        return n

    def delete_every_row(self) -> int:
        """Delete every row; how many were live. A table without a change feed goes by
        the store's own range deletion (RocksDB ``DeleteRange``, etcd range deletes)
        over its rows, index and expiry entries, without reading a row (the rows deleted
        are the row counter's less the expired ones not swept yet). A buffer's range
        deletes are not read back, so this is the last call of its transaction (the
        auto-commit handle's ``delete_range()``)."""
        scanner, lay = self._scanner, self._layout
        stored = scanner.stored_count()
        if self._events is not None or stored is None:  # a feed's events, or a table made before row counters
            return self.delete_range()
        expired = sum(1 for _ in self._buffer.keys(lay.expiry_prefix, lay.expired_bound(self._clock())))
        for prefix in (lay.row_prefix, *(p for _, p, _ in lay.indexes), lay.expiry_prefix):
            self._buffer.delete_prefix(prefix)
        deltas = self._buffer.row_deltas
        deltas[lay.count_key] = deltas.get(lay.count_key, 0) - stored
        return stored - expired

    def sweep(self, now: int, limit: int) -> tuple[int, bool]:
        """Remove up to ``limit`` rows expired by ``now``: how many were removed, and
        whether there may be more."""
        lay, n = self._layout, 0
        found = self._scanner.expired(now, limit)
        for enc, expires in found:
            raw = self._buffer.get(lay.row_prefix + enc)
            old = None if raw is None else lay.decode_row(raw)
            if old is None or old.expires != expires:  # a stale entry: the row was rewritten
                self._buffer.remove(lay.expiry_key(expires, enc))
                continue
            self._last_read = (old, raw)  # type: ignore[assignment]
            self._remove(key_of(self.spec, old.values), old, expired=True)
            n += 1
        return n, len(found) == limit

    def stored_page(self, range: Range | None, descending: bool, after: bytes | None, size: int) -> StoredPage:
        """Up to ``size`` stored values of the rows in ``range`` after the encoded key
        ``after``, in key order (for an auto-commit scan that decodes them later)."""
        values, next_after = self._scanner.stored_page(resolve_range(self.spec, range), descending, after, size)
        return StoredPage(values, self._layout, next_after)

    def _scan(self, request: ScanRequest) -> Iterator[Stored]:
        return self._scanner.stream(request, Stored)

    def _scan_rows(self, request: ScanRequest) -> Iterator[Row]:
        return self._scanner.stream(request, Row)

    def _scan_list(self, request: ScanRequest) -> list[Row]:
        return self._scanner.row_list(request)

    def _row_hasher(self, columns: tuple[str, ...], versions: bool) -> Callable[[Row], bytes]:
        """Digests read from the layout's row structs (timestamps as stored, microseconds)."""
        rows = self._layout.row_type
        return row_hasher(self.spec, columns, versions, (rows, rows.fields, self._layout.timestamps))

    def _count(self, key_range: ResolvedRange, where: Expr | None) -> int:
        return self._scanner.count(key_range, where)

    def _split(self, n: int) -> list[Range]:
        return self._scanner.split(n)

    def _explain(self, key_range: ResolvedRange, where: Expr | None, order_by: str | None) -> str:
        return self._scanner.explain(key_range, where, order_by)
