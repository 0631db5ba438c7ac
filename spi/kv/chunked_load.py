"""An auto-commit load into an empty table on a store that commits sorted streams
(RocksDB): its batches go in chunks of up to :data:`CHUNK_ROWS` rows, each committed
as one file the store ingests, not batch by batch through its memtable.

Loaded batch by batch, a big table's index entries (value, then key) land all over
the index's key range in every file the store flushes, so each compaction rewrites
that whole range again: write amplification, time and memory that grow with the
table. A chunk's writes (rows, index and expiry entries, change events) spill to
disk sorted (:meth:`~spi.kv.buffer.WriteBuffer.allow_spill`) and its commit merges
them into one sorted stream (:meth:`~spi.kv.store.StoreSession.commit_sorted`), with
the row counter and one change-feed revision.

A chunk is built as if the store held no key in its rows' range, without holding the
store: readers and writers of the store, the load's own source among them, go on
meanwhile. Its commit holds the store and checks that this is so (the table's layout
is the one the chunk was built for, and no row is stored between the chunk's first
and last keys), then commits the chunk; else it drops the chunk and raises
:class:`ConflictError` (a writer of that key range came in during the load).

Keys must be distinct within a chunk (its writes are never read back), so a batch
joins a chunk only when its keys are increasing and above those of the batches
before it; the first batch that is not (or a table that held rows when the load
started) commits the chunk under way, and the rest of the load goes batch by batch.

``progress`` is told only of committed rows. A bad row fails its batch: the chunk's
earlier batches commit before the error is raised, as they would have batch by
batch; an interrupt (``KeyboardInterrupt``) drops the chunk under way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from spi.clock import Clock
from spi.errors import ConflictError, KvError
from spi.kv.buffer import WriteBuffer
from spi.kv.bulk import RowBatch
from spi.kv.feed import FeedSettings
from spi.kv.layout import Layout, LayoutCache
from spi.kv.store import StoreSession
from spi.kv.table import KvTable
from spi.kv.transaction import commit, stored_layout
from spi.load import BatchWriter
from spi.primitives import Kept

CHUNK_ROWS = 2_000_000
"""Rows after which a chunk commits (it takes whole batches, so it may hold a few more)."""


class Detached(StoreSession):
    """The session under a chunk being built: it reads as a store holding no key, and
    once :attr:`session` is set (for the commit) it is that session."""

    __slots__ = ("session",)

    def __init__(self) -> None:
        self.session: StoreSession | None = None

    def _attached(self) -> StoreSession:
        assert self.session is not None, "a chunk commits on the session attached to it"
        return self.session

    def get(self, key: bytes) -> bytes | None:
        return None if self.session is None else self.session.get(key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return [None] * len(keys) if self.session is None else self.session.get_many(keys)

    def iterate(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        return iter(()) if self.session is None else self.session.iterate(lo, hi, reverse)

    def commit(self, range_deletes: list[tuple[bytes, bytes]], keys: list[bytes], values: list[bytes | None]) -> None:
        self._attached().commit(range_deletes, keys, values)

    def commits_sorted_stream(self) -> bool:
        return True  # chunks are only built on such stores

    def commit_sorted(
        self,
        range_deletes: list[tuple[bytes, bytes]],
        blocks: Iterator[tuple[list[bytes], list[bytes | None]]],
        cuts: Sequence[bytes] = (),
    ) -> None:
        self._attached().commit_sorted(range_deletes, blocks, cuts)

    def release(self) -> None:
        if self.session is not None:
            self.session.release()

    def generation(self) -> int | None:
        return None if self.session is None else self.session.generation()

    def advance_generation(self) -> None:
        self._attached().advance_generation()

    def announce(self, revision: int) -> None:
        self._attached().announce(revision)

    def known_revision(self) -> int | None:
        return None if self.session is None else self.session.known_revision()

    def blind_counters(self) -> bool:
        return self._attached().blind_counters()

    def feed_log(self) -> object | None:
        return self._attached().feed_log()


class _Chunk:
    """A chunk being built: its buffer over a :class:`Detached` session, the table
    written through it, its first and last row keys and its rows."""

    def __init__(self, layout: Layout, clock: Clock) -> None:
        self.view = Detached()
        self.buffer = WriteBuffer(self.view, clock)
        self.table = KvTable(self.buffer, layout).spilling()
        self.buffer.cut_files_at(layout.stretches())
        self.first = b""
        self.last = b""
        self.rows = 0


class ChunkedLoad:
    """The batch writer of one auto-commit load (see the module's docstring).

    ``layout``: the table's, read as the load started, when the store commits sorted
    streams and the table held no row (None: batch by batch from the start);
    ``session()`` starts a writing session for a chunk's commit; ``alone`` writes a
    batch in a transaction of its own; ``expires``: the load's expiry."""

    def __init__(
        self,
        layout: Layout | None,
        layouts: LayoutCache,
        feed: FeedSettings,
        session: Callable[[], StoreSession],
        alone: BatchWriter,
        expires: int | None,
        progress: Callable[[int], None] | None,
    ) -> None:
        self._layout = layout
        self._layouts = layouts
        self._feed = feed
        self._session = session
        self._alone = alone
        self._expires = expires
        self._progress = progress
        self._chunk: _Chunk | None = None
        self._last: bytes | None = None  # the last row key written in chunks
        self._committed = 0

    def run(self, load: Callable[[BatchWriter, Callable[[int], None]], int]) -> int:
        """``load(write_batch, progress)`` (:func:`spi.load.run_load`) with this writer,
        committing the chunk under way at its end or at an error (an interrupt drops
        it); a :class:`KvError`'s ``rows_written`` counts the committed rows."""
        try:
            written = load(self._write, self._report)
        except Exception as exc:
            try:
                self._commit()
            except KvError as late:
                late.rows_written = self._committed
                raise
            finally:
                if isinstance(exc, KvError) and exc.rows_written is not None:  # an error of the load's batches
                    exc.rows_written = self._committed
            raise
        except BaseException:
            self._drop()
            raise
        try:
            self._commit()
        except KvError as exc:
            exc.rows_written = self._committed
            raise
        return written

    def _write(self, batch: Any, mode: str, kept: Kept | None) -> None:
        """Write ``batch`` into the chunk if it follows the batches before it in key
        order, else commit the chunk and write it alone (and every batch after it)."""
        layout = self._layout
        if layout is None:
            self._alone(batch, mode, kept)
            return
        keys = batch.keys if isinstance(batch, RowBatch) and batch.ordered else None
        if not keys or (self._last is not None and keys[0] <= self._last):
            self._commit()
            self._layout = None
            self._alone(batch, mode, kept)
            return
        chunk = self._chunk
        if chunk is None:
            chunk = self._chunk = _Chunk(layout, self._layouts.clock)
            chunk.first = keys[0]
        try:
            chunk.table.write_prepared(batch, mode, kept, self._expires)
            chunk.buffer.spill_if_large()
        except BaseException:
            self._drop()
            raise
        chunk.last = self._last = keys[-1]
        chunk.rows += len(keys)
        if chunk.rows >= CHUNK_ROWS:
            self._commit()

    def _report(self, written: int) -> None:
        """``progress`` of the committed rows, after each batch (``written``: the rows
        written, in a chunk or committed)."""
        if self._layout is None:  # batch by batch now: every row written is committed
            self._committed = written
        if self._progress is not None:
            self._progress(self._committed)

    def _commit(self) -> None:
        """Commit the chunk under way (if any), as the module's docstring says."""
        chunk, self._chunk = self._chunk, None
        if chunk is None:
            return
        assert self._layout is not None
        buffer = chunk.buffer
        try:
            chunk.view.session = self._session()
            layout = stored_layout(buffer, self._layouts, self._layout.spec.name)
            if layout.signature != self._layout.signature or buffer.any_stored(chunk.first, chunk.last):
                raise ConflictError(
                    f"table {layout.spec.name!r} was written or altered by another writer during the load; "
                    f"its last {chunk.rows} rows were not written"
                )
        except BaseException:
            buffer.discard()
            raise
        commit(buffer, self._feed)
        self._committed += chunk.rows
        if self._progress is not None:
            self._progress(self._committed)

    def _drop(self) -> None:
        """Drop the chunk under way (its spilled writes too)."""
        chunk, self._chunk = self._chunk, None
        if chunk is not None:
            chunk.buffer.discard()
