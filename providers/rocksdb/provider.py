"""``rocksdb:``: the :mod:`spi.kv` engine over a RocksDB directory (rocksdict)."""

from __future__ import annotations

import contextlib
import os
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, count, islice
from typing import Any, TypeVar

from providers.rocksdb.handle import driver_error, handle_for
from providers.rocksdb.url import RocksUrl, parse_url
from spi.capabilities import SHARED_DURABLE
from spi.errors import KvError, ProviderUnavailableError, UrlError
from spi.kv import KvProvider, OrderedStore, StoreSession
from spi.kv.spill import Block, merge_blocks
from spi.kv.store import FIRST_CHUNK, MAX_CHUNK, STALE, Stale, chunked

_INGESTS = count()
"""Numbers the SST files a process writes for ingestion."""

T = TypeVar("T")


class _RocksSession(StoreSession):
    """One transaction's exclusive use of the open database.

    Store iterators live in "boxes" the session can empty: RocksDB keeps a
    database (and its LOCK) alive while any iterator exists, so ``release`` drops
    every iterator even if a scan generator is still referenced somewhere.
    """

    __slots__ = ("_boxes", "_db", "_handle", "_store")

    def __init__(self, store: RocksStore, db: Any) -> None:
        self._store = store
        self._handle = store.handle
        self._db = db
        self._boxes: dict[int, list[Any]] | None = None  # made by the first scan: most one-off reads never scan

    def get(self, key: bytes) -> bytes | None:
        try:
            return self._db.get(key)  # type: ignore[no-any-return]
        except Exception as exc:
            raise driver_error(exc, "reading", self._handle.path) from None

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        try:
            return self._db.get(keys)  # type: ignore[no-any-return]
        except Exception as exc:
            raise driver_error(exc, "reading", self._handle.path) from None

    def iterate(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        return self._backwards(lo, hi) if reverse else self._forwards("items", lo, hi)

    def values(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[bytes]:
        if reverse:
            return (v for _, v in self._backwards(lo, hi))
        return self._forwards("values", lo, hi)

    def value_chunks(self, lo: bytes, hi: bytes | None, reverse: bool, first: int) -> Iterator[list[bytes]]:
        if reverse:
            return chunked(self.values(lo, hi, reverse), first)
        return self._forwards("values", lo, hi, first)

    def item_chunks(self, lo: bytes, hi: bytes | None, first: int) -> Iterator[list[tuple[bytes, bytes]]]:
        return self._forwards("items", lo, hi, first)

    def keys(self, lo: bytes, hi: bytes | None) -> Iterator[bytes]:
        return self._forwards("keys", lo, hi)

    def _forwards(self, what: str, lo: bytes, hi: bytes | None, chunk: int | None = None) -> Iterator[Any]:
        """``Rdict.items``, ``keys`` or ``values`` from ``lo``, stopped by RocksDB at ``hi``
        (with ``chunk``: in the lists they are fetched in, the first of ``chunk``). A scan
        of rows (``values``) reads past the block cache: a copy or export of a big table
        would otherwise fill it with blocks read once, for a process's whole life."""

        def start() -> Any:
            import rocksdict

            options = rocksdict.ReadOptions()
            if what == "values":
                options.fill_cache(False)  # type: ignore[call-arg]  # the stub omits the flag the method takes
            if hi is not None:
                options.set_iterate_upper_bound(hi)
            return getattr(self._db, what)(from_key=lo, read_opt=options)

        return self._chunks(start) if chunk is None else self._chunk_lists(start, chunk)

    def _backwards(self, lo: bytes, hi: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        # No iterate_lower_bound: in rocksdict 0.3.29 setting it clobbers the upper bound.
        # Backwards from seek_for_prev(hi): skip hi itself, stop below lo.
        db = self._db
        for item in self._chunks(lambda: db.items(backwards=True, from_key=hi) if hi is not None else db.items(True)):
            if item[0] < lo:
                return
            if hi is None or item[0] < hi:
                yield item

    def _chunks(self, start: Callable[[], Any]) -> Iterator[Any]:
        """What the iterator ``start()`` opens (when first asked), fetched in growing chunks
        from a box that :meth:`release` empties."""
        return chain.from_iterable(self._chunk_lists(start))  # flattened in C, not per item in Python

    def _chunk_lists(self, start: Callable[[], Any], first: int = FIRST_CHUNK) -> Iterator[list[Any]]:
        box: list[Any] = []
        if self._boxes is None:
            self._boxes = {}
        self._boxes[id(box)] = box
        try:
            try:
                box.append(start())
            except Exception as exc:
                raise driver_error(exc, "scanning", self._handle.path) from None
            size = first
            while True:
                if not box:
                    raise KvError("this scan's transaction has ended; scans are valid only inside their transaction")
                try:
                    chunk = list(islice(box[0], size))
                except Exception as exc:
                    raise driver_error(exc, "scanning", self._handle.path) from None
                yield chunk
                if len(chunk) < size:
                    return
                size = max(size, min(size * 4, MAX_CHUNK))
        finally:
            box.clear()
            if self._boxes is not None:
                self._boxes.pop(id(box), None)

    def commit(self, range_deletes: list[tuple[bytes, bytes]], keys: list[bytes], values: list[bytes | None]) -> None:
        db, options = self._db, self._store.write_options
        try:
            if len(keys) == 1 and not range_deletes:  # one write is atomic by itself: no batch to build
                if values[0] is None:
                    db.delete(keys[0], options)
                else:
                    db.put(keys[0], values[0], options)
            else:
                batch = self._store.batch_type(raw_mode=True)
                for lo, hi in range_deletes:
                    batch.delete_range(lo, hi)
                put, delete = batch.put, batch.delete
                if None in values:
                    for key, value in zip(keys, values):
                        if value is None:
                            delete(key)
                        else:
                            put(key, value)
                else:
                    deque(map(put, keys, values), maxlen=0)  # no deletes: one loop in C
                db.write(batch, options)
            self._handle.wrote = True
        except Exception as exc:
            raise driver_error(exc, "committing", self._handle.path) from None

    def generation(self) -> int:
        return self._handle.generation

    def advance_generation(self) -> None:
        self._handle.generation += 1

    def commits_sorted_stream(self) -> bool:
        return True

    def commit_sorted(
        self,
        range_deletes: list[tuple[bytes, bytes]],
        blocks: Iterator[tuple[list[bytes], list[bytes | None]]],
        cuts: Sequence[bytes] = (),
    ) -> None:
        """Write the stream into SST files in the database's folder, a new one at each
        of the ``cuts`` the stream crosses, and ingest them together: atomic as a
        batch, with no more than a block of it in memory. A file whose key range no file of the database overlaps goes to the
        bottom level, where RocksDB does not compact it (a load's rows, in key order,
        into an empty table). The range deletes become deletes of the keys in those
        ranges (an SST file written from Python holds no range deletes), which the
        stream's own writes override."""
        import rocksdict

        tombstones = (_deletes(self.keys(lo, hi)) for lo, hi in range_deletes)
        paths: list[str] = []
        try:
            writer: Any = None
            at = 0  # the next cut
            for keys, values in merge_blocks(*tombstones, blocks):
                start = 0
                while start < len(keys):
                    if writer is None or (at < len(cuts) and keys[start] >= cuts[at]):
                        while at < len(cuts) and keys[start] >= cuts[at]:
                            at += 1
                        if writer is not None:
                            writer.finish()
                        paths.append(
                            os.path.join(self._handle.path, f"kvctl-ingest-{os.getpid()}-{next(_INGESTS)}.sst")
                        )
                        writer = rocksdict.SstFileWriter(rocksdict.Options(raw_mode=True))
                        writer.open(paths[-1])
                    end = len(keys) if at == len(cuts) else bisect_left(keys, cuts[at], start)
                    _write_sst(writer, keys[start:end], values[start:end])
                    start = end
            if writer is None:
                return
            writer.finish()
            ingest = rocksdict.IngestExternalFileOptions()
            ingest.set_move_files(True)
            self._db.ingest_external_file(paths, ingest)
            self._handle.wrote = True
        except Exception as exc:
            raise driver_error(exc, "committing", self._handle.path) from None
        finally:
            for path in paths:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)

    def announce(self, revision: int) -> None:
        self._handle.announce(revision)

    def known_revision(self) -> int | None:
        return self._handle.known_revision()

    def release(self) -> None:
        self._end()
        self._handle.release()

    def _end(self) -> None:
        """Drop the session's iterators and its database."""
        if self._boxes:
            for box in list(self._boxes.values()):
                box.clear()
            self._boxes.clear()
        self._db = None


class _IdleSession(_RocksSession):
    """A session over the open database for a call run while the store is idle
    (:meth:`RocksStore.write_if_idle`): the handle is not acquired, so ending the
    session releases nothing but the session's iterators."""

    __slots__ = ()

    def release(self) -> None:
        self._end()


class RocksStore(OrderedStore):
    """A RocksDB directory handing out exclusive sessions (threads and processes)."""

    def __init__(self, options: RocksUrl) -> None:
        self.options = options
        self.handle = handle_for(options.path)
        self.write_options: Any = None
        """The options of every commit (made with the first session: rocksdict is
        imported when first used)."""
        self.batch_type: Any = None
        """``rocksdict.WriteBatch``."""

    def session(self, read_only: bool = False) -> StoreSession:
        db = self.handle.acquire(self.options.busy_timeout, read_only)
        if self.write_options is None:
            self._prepare()
        return _RocksSession(self, db)

    def brief_session(self) -> StoreSession:
        db = self.handle.acquire(self.options.busy_timeout, True, brief=True)  # a watcher only reads
        if self.write_options is None:
            self._prepare()
        return _RocksSession(self, db)

    def _prepare(self) -> None:
        import rocksdict

        options = rocksdict.WriteOptions()
        options.sync = self.options.sync
        self.batch_type, self.write_options = rocksdict.WriteBatch, options

    def peek_generation(self) -> int | None:
        return self.handle.generation

    def get_if_idle(self, generation: int, key: bytes) -> bytes | Stale | None:
        return self.handle.get_if_idle(generation, key)

    def write_if_idle(self, generation: int, fn: Callable[[StoreSession], T]) -> T | Stale:
        if self.write_options is None:
            return STALE  # no writing session made yet
        return self.handle.run_if_idle(generation, lambda db: fn(_IdleSession(self, db)))

    def close(self) -> None:
        self.handle.close_if_idle()

    def change_marker(self) -> Any:
        return self.handle.revision_marker()

    def wait_for_change(self, marker: Any, timeout: float) -> None:
        self.handle.wait_for_announcement(marker, timeout)


class RocksDBProvider(KvProvider):
    """The embedded RocksDB provider: ``rocksdb:///abs/path`` or ``rocksdb:relative/path``.

    ``spi.connect(url, create=False)`` opens only an existing database (see :meth:`from_url`).

    URL options: ``?busy_timeout=SECONDS`` (default 5) bounds how long a
    transaction waits for another thread's or process's transaction;
    ``?sync=true`` fsyncs the write-ahead log on every commit (default false:
    commits survive a killed process, the last ones may be lost on power loss);
    ``?changes_retention=SECONDS`` (default 7 days, 0: until compacted) how long
    change-feed events are kept; ``?sweep_interval=SECONDS`` (default 60, 0: never)
    how often an open provider sweeps expired rows in the background.
    """

    capabilities: frozenset[str] = SHARED_DURABLE

    @classmethod
    def from_url(cls, url: str, *, create: bool = True) -> RocksDBProvider:
        """Open ``url``. With ``create`` the database directory is made by the first
        transaction if missing; without it the path must already hold a RocksDB
        database, else :class:`UrlError` naming the path (nothing is created)."""
        options = parse_url(url)
        path = options.path
        if os.path.exists(path) and not os.path.isdir(path):
            raise ProviderUnavailableError(
                f"rocksdb {path} exists and is not a directory; a rocksdb: URL names a database directory"
            )
        if not create and not os.path.isfile(os.path.join(path, "CURRENT")):
            what = "is not a RocksDB database" if os.path.isdir(path) else "does not exist"
            raise UrlError(f"rocksdb database {path} {what} (check the path; nothing was created)")
        return cls(
            url,
            RocksStore(options),
            changes_retention=options.changes_retention,
            sweep_interval=options.sweep_interval,
        )

    def __init__(self, url: str, store: RocksStore, *, changes_retention: float, sweep_interval: float) -> None:
        super().__init__(url, store, changes_retention=changes_retention, sweep_interval=sweep_interval)
        self._path = os.path.realpath(store.options.path)
        self._handle = store.handle

    def stats(self) -> dict[str, int]:
        """See :meth:`ProviderBase.stats` (with this directory's lock waits and hand-offs)."""
        return self.counters.snapshot(self._handle.counters)

    @property
    def store_id(self) -> str:
        """``rocksdb:`` and the database directory's real path."""
        return f"rocksdb:{self._path}"


def _deletes(keys: Iterator[bytes]) -> Iterator[Block]:
    """Deletes of ``keys`` (in order), in blocks."""
    for chunk in chunked(keys):
        yield chunk, [None] * len(chunk)


def _write_sst(writer: Any, keys: list[bytes], values: list[bytes | None]) -> None:
    """Add the writes to an open ``SstFileWriter`` (keys in order, above its last)."""
    if None not in values:
        deque(map(writer.__setitem__, keys, values), maxlen=0)  # no deletes: one loop in C
        return
    for key, value in zip(keys, values):
        if value is None:
            del writer[key]
        else:
            writer[key] = value
