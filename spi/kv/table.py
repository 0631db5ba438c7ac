"""Table operations over the ordered-store layout: point reads and writes keep a
row and its index entries together; scans go to :class:`spi.kv.scan.Scanner`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Any

from spi.filters import Expr
from spi.kept import write_kept
from spi.keys import Range, ResolvedRange, key_of
from spi.kv.buffer import WriteBuffer
from spi.kv.bulk import KvLoadPreparer, RowBatch
from spi.kv.feed import delete_event, put_event, put_events
from spi.kv.layout import Layout
from spi.kv.scan import Scanner
from spi.primitives import Kept, ScanRequest, Stored
from spi.row import Row
from spi.table import TableBase


class KvTable(TableBase):
    """One table in one transaction of the ordered-store engine."""

    def __init__(self, buffer: WriteBuffer, layout: Layout) -> None:
        super().__init__(layout.spec)
        self._buffer = buffer
        self._layout = layout
        self._scanner_made: Scanner | None = None
        self._last_key: tuple[Any, ...] | None = None
        self._last_encoded = b""
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

    def _get(self, key: tuple[Any, ...]) -> Stored | None:
        raw = self._buffer.get(self._layout.row_prefix + self._encoded(key))
        return None if raw is None else self._layout.decode_row(raw)

    def _get_many(self, keys: list[tuple[Any, ...]]) -> list[Stored | None]:
        lay = self._layout
        prefix, encode, decode = lay.row_prefix, lay.encode_key, lay.decode_row
        raws = self._buffer.get_many([prefix + encode(k) for k in keys])
        return [None if raw is None else decode(raw) for raw in raws]

    def _put(self, key: tuple[Any, ...], values: dict[str, Any], version: int, old: Stored | None) -> None:
        lay = self._layout
        enc = self._encoded(key)
        put = self._buffer.put
        for column, prefix, encode in lay.indexes:
            new_value = values[column]
            if old is not None:
                old_value = old.values[column]
                if old_value == new_value and type(old_value) is type(new_value):
                    continue
                put(prefix + encode(old_value) + enc, None)
            put(prefix + encode(new_value) + enc, b"")
        row_key, stored = lay.row_prefix + enc, lay.encode_row(values, version)
        put(row_key, stored)
        if self._events is not None:
            self._events.append(put_event(row_key, stored))

    def _load_preparer(self) -> KvLoadPreparer:
        return self._layout.load_preparer()

    def _load_batch(self, batch: RowBatch, mode: str) -> None:
        """Bulk path: an encoded batch goes straight into the write buffer, except rows
        whose keys exist (the generic per-row path writes those). A batch only
        validated, one that repeats a key or one encoded for a layout that has changed
        since takes the generic path whole."""
        if not self._encoded_fits(batch):
            super()._load_batch(batch.all_rows(), mode)
            return
        write = {"upsert": self._upsert_at, "insert": self._insert_at, "replace": self._replace_at}[mode]
        assert batch.stored is not None
        self._load_encoded(batch, batch.stored, mode, lambda i, key, values, old: write(key, values, old))

    def _load_kept(self, batch: RowBatch, mode: str, kept: Kept) -> None:
        """:meth:`_load_batch` with each row at its kept version."""
        if not self._encoded_fits(batch):
            super()._load_kept(batch.all_rows(), mode, kept)
            return
        versions = kept.versions
        self._load_encoded(
            batch,
            batch.stored_at(versions),
            mode,
            lambda i, key, values, old: write_kept(self, key, values, versions[i], old, mode),
        )

    def _encoded_fits(self, batch: RowBatch) -> bool:
        """True when the bulk path can write ``batch``: encoded for this layout, no key twice."""
        keys = batch.keys
        return batch.stored is not None and batch.signature == self._layout.signature and len(set(keys)) == len(keys)

    def _load_encoded(
        self,
        batch: RowBatch,
        stored: list[bytes],
        mode: str,
        write: Callable[[int, tuple[Any, ...], dict[str, Any], Stored], object],
    ) -> None:
        """Put the encoded rows ``stored`` whose keys are new; ``write(i, key, values,
        old)`` row ``i`` whose key exists (an insert fails whole first)."""
        lay, buffer, keys = self._layout, self._buffer, batch.keys
        olds = buffer.get_many(keys)
        events = self._events
        if olds.count(None) == len(olds):
            # Rows first: a load usually comes in key order, which the sort at commit uses.
            buffer.put_many(keys, stored)
            for entries in batch.entries:
                buffer.put_many(entries, repeat(b""))
            if events is not None:
                events.append(put_events(keys, stored))
            return
        if mode == "insert":  # fails whole, before any write (see TableBase._load_batch)
            first = next(i for i, old in enumerate(olds) if old is not None)
            raise self._exists_error(key_of(self.spec, batch.row(first)))
        for i, old in enumerate(olds):
            if old is None:
                buffer.put(keys[i], stored[i])
                for entries in batch.entries:
                    buffer.put(entries[i], b"")
                if events is not None:
                    events.append(put_event(keys[i], stored[i]))
            else:
                values = batch.row(i)
                write(i, key_of(self.spec, values), values, lay.decode_row(old))

    def _remove(self, key: tuple[Any, ...], old: Stored) -> None:
        lay = self._layout
        enc = self._encoded(key)
        for column, prefix, encode in lay.indexes:
            self._buffer.remove(prefix + encode(old.values[column]) + enc)
        self._buffer.remove(lay.row_prefix + enc)
        if self._events is not None:
            self._events.append(delete_event(lay.row_prefix + enc))

    def _scan(self, request: ScanRequest) -> Iterator[Stored]:
        return self._scanner.stream(request, Stored)

    def _scan_rows(self, request: ScanRequest) -> Iterator[Row]:
        return self._scanner.stream(request, Row.adopt)

    def _count(self, key_range: ResolvedRange, where: Expr | None) -> int:
        return self._scanner.count(key_range, where)

    def _split(self, n: int) -> list[Range]:
        return self._scanner.split(n)

    def _explain(self, key_range: ResolvedRange, where: Expr | None, order_by: str | None) -> str:
        return self._scanner.explain(key_range, where, order_by)
