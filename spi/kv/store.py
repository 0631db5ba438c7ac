"""The interface an ordered byte store implements to get the whole engine."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
from itertools import islice
from typing import Any, Final, Literal, TypeVar

from spi.errors import KvError

T = TypeVar("T")

POLL_INTERVAL = 0.1
"""Seconds between two looks of a watch on a store that cannot signal changes."""


class _Stale(Enum):
    STALE = 0


STALE: Final = _Stale.STALE
"""What :meth:`OrderedStore.get_if_idle` returns when the caller must start a session."""
Stale = Literal[_Stale.STALE]


def ended_error() -> KvError:
    """The error of a scan used after its transaction (or one-off read) ended."""
    return KvError("this scan's transaction has ended; scans are valid only inside their transaction")


FIRST_CHUNK = 16
"""Items a store iteration fetches first (later fetches grow to :data:`MAX_CHUNK`)."""
MAX_CHUNK = 1024


def chunked(items: Iterator[Any], first: int = FIRST_CHUNK) -> Iterator[list[Any]]:
    """``items`` in non-empty lists: ``first`` items, then four times as many each
    time up to :data:`MAX_CHUNK` (never fewer than ``first``)."""
    size = first
    while True:
        chunk = list(islice(items, size))
        if chunk:
            yield chunk
        if len(chunk) < size:
            return
        size = max(size, min(size * 4, MAX_CHUNK))


class StoreSession(ABC):
    """Exclusive access to an ordered byte store for one transaction."""

    __slots__ = ()

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

    def value_chunks(self, lo: bytes, hi: bytes | None, reverse: bool, first: int) -> Iterator[list[bytes]]:
        """The values of :meth:`values` in lists (see :func:`chunked`), each fetched
        when asked for (stores may hand the lists they fetch in)."""
        return chunked(self.values(lo, hi, reverse), first)

    def item_chunks(self, lo: bytes, hi: bytes | None, first: int) -> Iterator[list[tuple[bytes, bytes]]]:
        """The items of :meth:`iterate` in key order, in lists (see :func:`chunked`),
        each fetched when asked for (stores may hand the lists they fetch in)."""
        return chunked(self.iterate(lo, hi, False), first)

    def keys(self, lo: bytes, hi: bytes | None) -> Iterator[bytes]:
        """The keys of :meth:`iterate`, in order (stores may skip fetching the values)."""
        return (k for k, _ in self.iterate(lo, hi, False))

    @abstractmethod
    def commit(self, range_deletes: list[tuple[bytes, bytes]], keys: list[bytes], values: list[bytes | None]) -> None:
        """Atomically delete the ranges ``[lo, hi)``, then write ``values[i]`` under
        ``keys[i]`` (None deletes); the keys are distinct and in order."""

    def commits_sorted_stream(self) -> bool:
        """True when :meth:`commit_sorted` takes its stream without holding it in memory
        (RocksDB: as one file it ingests), so a long transaction may spill its writes
        to disk (:meth:`spi.kv.buffer.WriteBuffer.allow_spill`)."""
        return False

    def commit_sorted(
        self,
        range_deletes: list[tuple[bytes, bytes]],
        blocks: Iterator[tuple[list[bytes], list[bytes | None]]],
        cuts: Sequence[bytes] = (),
    ) -> None:
        """:meth:`commit` of ``blocks``, each ``(keys, values)``: ``values[i]`` (None: a
        delete) under ``keys[i]``, every key of the stream distinct and in order; here
        gathered into lists first. ``cuts``: keys (in order) where a store that writes
        files may start a new one, so that each file covers one stretch of the key space
        (RocksDB: a table's rows, each index's entries)."""
        keys: list[bytes] = []
        values: list[bytes | None] = []
        for block_keys, block_values in blocks:
            keys += block_keys
            values += block_values
        self.commit(range_deletes, keys, values)

    @abstractmethod
    def release(self) -> None:
        """End the session (after commit or to abandon it)."""

    def generation(self) -> int | None:
        """A number that stays the same from one session to the next for as long as
        nothing but this process's sessions can have written the store and no session
        called :meth:`advance_generation`; None when the store cannot tell.

        The engine uses it to trust a table layout it decoded earlier without reading
        the catalog again (RocksDB: the database stayed open, so no other process wrote).
        """
        return None

    def advance_generation(self) -> None:
        """Note that this session commits a change :meth:`generation` must reflect (a
        catalog change): later sessions get a new number."""

    def announce(self, revision: int) -> None:
        """Called after a commit that took change-feed ``revision``, before the
        session ends: wake the store's watchers (:meth:`OrderedStore.change_marker`)."""

    def known_revision(self) -> int | None:
        """The revision last announced, if nothing else can have committed one since
        (RocksDB: the database stayed open; see :meth:`generation`); None: read it."""
        return None

    def blind_counters(self) -> bool:
        """True when a commit should add to a table's row counter by writing a delta
        entry of its own (:func:`spi.kv.counters.add`) instead of rewriting the counter:
        for optimistic stores, where every insert rewriting one key would make any two
        concurrent inserts into a table conflict."""
        return False

    def feed_log(self) -> object | None:
        """Where this store keeps the change feed, a :class:`spi.kv.feed.FeedLog`
        (typed loosely: the feed module builds on this one); None: the engine's own
        (a revision counter, pages keyed by revision)."""
        return None


class OrderedStore(ABC):
    """A sorted byte-string map that hands out exclusive sessions."""

    @abstractmethod
    def session(self, read_only: bool = False) -> StoreSession:
        """Wait for exclusive access (busy timeout) and start a session; ``read_only``:
        the session will not commit (a store may open itself more cheaply for it)."""

    def peek_generation(self) -> int | None:
        """The :meth:`StoreSession.generation` a session started now would most likely
        see (None: the store cannot tell); :meth:`get_if_idle` checks it again."""
        return None

    def get_if_idle(self, generation: int, key: bytes) -> bytes | Stale | None:
        """One read outside any session, for a one-off call: the value under ``key``
        when nothing else runs on the store now and its generation is still
        ``generation`` (so a layout remembered under it still holds), read while
        nothing can start; else :data:`STALE`: start a session. Stores that cannot
        tell answer STALE."""
        return STALE

    def write_if_idle(self, generation: int, fn: Callable[[StoreSession], T]) -> T | Stale:
        """``fn(session)`` for a one-off write, on a session made without waiting:
        only when nothing else runs on the store now and its generation is still
        ``generation``, with nothing able to start until ``fn`` returns; else
        :data:`STALE` (``fn`` not called): start a session. ``fn`` commits or discards
        the session's writes as usual. Stores that cannot tell answer STALE."""
        return STALE

    def brief_session(self) -> StoreSession:
        """A session for one short read by a caller that then waits a while (a
        watch): stores may release at once what they had to open for it."""
        return self.session()

    def close(self) -> None:
        """Release everything the store holds."""

    def change_marker(self) -> Any:
        """A cheap value that changes whenever a session announces a revision (in any
        process that shares the store); None when the store cannot tell."""
        return None

    def wait_for_change(self, marker: Any, timeout: float) -> None:
        """Return once :meth:`change_marker` is no longer ``marker``, or after
        ``timeout`` seconds (a store that cannot tell just sleeps: watchers poll)."""
        time.sleep(min(timeout, POLL_INTERVAL))
