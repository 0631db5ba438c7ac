"""The write side of the ordered-store engine's change feed: revisions, how events
are stored, compaction and retention (the key layout is in :mod:`spi.kv.layout`).

A write to a change-fed table appends its event to the transaction's
``WriteBuffer.events``. At commit, :func:`record` reads the store's revision, takes
the next one and adds the revision's pages of events and the new counter to the
same batch as the rows, so the one atomic store commit holds all of them: there is
never a row without its event nor an event without its row. Store sessions are
exclusive, so the counter read at commit cannot change before the batch lands:
commit order is revision order and revisions have no gaps.

Events are stored :data:`PAGE` to a store entry (a page starts with the commit
time), not one entry each, and a page is built column by column: a bulk load of
10,000 rows adds 10 entries to its batch instead of 10,000, framed by a few joins
in C. That is what keeps a change-fed load near 1.2x the time of a plain one.

An event stores its op, the row key and bytes whose meaning the op gives
(:data:`OP_CREATE`...): the row as stored after a put, and the row as stored before
the write where there was one (``prev``) — the very bytes the write read, never
encoded again. A store written before ``created``/``prev`` existed has puts as
:data:`OP_PUT` and deletes without bytes: they read with ``created``/``prev`` None.

Compaction (``compact`` and the retention period) range-deletes the oldest pages
and records the revision the feed is compacted through. Retention runs at most
once per :attr:`FeedSettings.check_every` seconds per provider, in a commit that
records events: a binary search over the revisions' first pages (a few point
reads) finds the last revision older than the period.

Where the pages live and how a commit takes its revision is the store's
:class:`FeedLog` (:meth:`spi.kv.StoreSession.feed_log`): this module's own, a
counter under ``REVISION`` and the pages keyed by revision, is the default; a store
whose commits are numbered by the engine underneath (etcd: the revision of the
commit's ``Txn``) gives its own.
"""

from __future__ import annotations

import struct
import sys
import time
from array import array
from collections.abc import Generator, Iterable, Iterator
from itertools import chain, count, repeat

from spi.changes import DEFAULT_RETENTION
from spi.clock import SYSTEM_CLOCK, now_micros
from spi.kv.buffer import WriteBuffer
from spi.kv.layout import COMPACTED, EVENTS, REVISION, pack, unpack

_PAGE_KEY = struct.Struct(f">{len(EVENTS)}sQI")
_REVISION_KEY = struct.Struct(f">{len(EVENTS)}sQ")
_PAGE_HEAD = struct.Struct(">qI")  # a page: the commit time (µs since the epoch, UTC), the event count
_SWAP = sys.byteorder == "big"  # lengths are stored little-endian
_ONE = struct.Struct("<BII")  # the op and lengths of a page of one event

PAGE = 1000
"""Events per stored page."""

OP_PUT, OP_DELETE, OP_EXPIRE, OP_CREATE, OP_UPDATE = 0, 1, 2, 3, 4
"""Stored event operations and their bytes: :data:`OP_PUT` a put written before
``created`` existed (the row after it); :data:`OP_DELETE`, :data:`OP_EXPIRE` the
removed row as it was stored (empty when written before ``prev`` existed);
:data:`OP_CREATE` a put that found no live row (the row after it); :data:`OP_UPDATE`
a put over a live row (the new row's length, 4 bytes little-endian, the new row, the
old row)."""
PUBLIC_OPS = (0, 1, 2, 0, 0)
"""Each stored op's position in :data:`spi.changes.OPS`."""

Events = tuple[int, bytes, bytes] | tuple[list[bytes], list[bytes]]
"""What a write adds to ``WriteBuffer.events``: one event ``(op, row key, its
bytes)`` or a batch of created rows ``(row keys, stored rows)`` (a load)."""
_CREATES = bytes([OP_CREATE]) * PAGE
_NEW_LENGTH = struct.Struct("<I")


def page_key(revision: int, page: int) -> bytes:
    """Store key of page ``page`` of ``revision``'s events (0: the first)."""
    return _PAGE_KEY.pack(EVENTS, revision, page)


def revision_start(revision: int) -> bytes:
    """The smallest store key of ``revision``'s pages."""
    return _REVISION_KEY.pack(EVENTS, revision)


def parse_page_key(key: bytes) -> tuple[int, int]:
    """(revision, page) of a page key."""
    _, revision, page = _PAGE_KEY.unpack(key)
    return revision, page


def _lengths(data: bytes) -> array[int]:
    lengths = array("I")
    lengths.frombytes(data)
    if _SWAP:
        lengths.byteswap()
    return lengths


def parse_page(value: bytes) -> tuple[int, list[tuple[int, bytes, bytes]]]:
    """The commit time (µs) of a stored page and its events, each ``(stored op, row
    key, its bytes)`` (see :data:`OP_PUT`)."""
    when, n = _PAGE_HEAD.unpack_from(value)
    ops_at = _PAGE_HEAD.size
    keys_at = ops_at + n
    stored_at = keys_at + 4 * n
    key_lengths, stored_lengths = _lengths(value[keys_at:stored_at]), _lengths(value[stored_at : stored_at + 4 * n])
    pos = stored_at + 4 * n
    keys = []
    for length in key_lengths:
        keys.append(value[pos : pos + length])
        pos += length
    events = []
    for op, key, length in zip(value[ops_at:keys_at], keys, stored_lengths):
        events.append((op, key, value[pos : pos + length]))
        pos += length
    return when, events


class _Page:
    """A page being built: the columns of its events."""

    def __init__(self) -> None:
        self.ops = bytearray()
        self.key_lengths = array("I")
        self.stored_lengths = array("I")
        self.keys: list[bytes] = []
        self.stored: list[bytes] = []

    def __len__(self) -> int:
        return len(self.ops)

    def encode(self, when: int) -> bytes:
        if _SWAP:
            self.key_lengths.byteswap()
            self.stored_lengths.byteswap()
        head = _PAGE_HEAD.pack(when, len(self.ops))
        lengths = self.key_lengths.tobytes() + self.stored_lengths.tobytes()
        return b"".join([head, self.ops, lengths, *self.keys, *self.stored])


def _pages(when: int, events: list[Events]) -> list[bytes]:
    """The stored pages of a transaction's events (at least one, maybe empty): each
    the time, the count, then the ops, the lengths and the bytes column by column,
    so a batch of rows is framed by a few joins in C, with nothing built per row."""
    if len(events) == 1 and len(events[0]) == 3:  # one write: no columns to build
        op, key, stored = events[0]
        return [_PAGE_HEAD.pack(when, 1) + _ONE.pack(op, len(key), len(stored)) + key + stored]
    return list(_page_stream(when, events))


def _page_stream(when: int, events: Iterable[Events]) -> Iterator[bytes]:
    """The pages of :func:`_pages`, each made when asked for (a spilled transaction's
    events are read back from disk as its commit writes them)."""
    made = 0
    page = _Page()
    for item in events:
        if len(item) == 3:
            op, key, stored = item
            page.ops.append(op)
            page.key_lengths.append(len(key))
            page.stored_lengths.append(len(stored))
            page.keys.append(key)
            page.stored.append(stored)
        else:
            keys, rows = item
            i = 0
            while i < len(keys):
                take = min(PAGE - len(page), len(keys) - i)
                ks, ss = keys[i : i + take], rows[i : i + take]
                page.ops += _CREATES[:take]
                page.key_lengths.extend(map(len, ks))
                page.stored_lengths.extend(map(len, ss))
                page.keys.append(b"".join(ks))
                page.stored.append(b"".join(ss))
                i += take
                if len(page) == PAGE:
                    yield page.encode(when)
                    made += 1
                    page = _Page()
            continue
        if len(page) == PAGE:
            yield page.encode(when)
            made += 1
            page = _Page()
    if len(page) or not made:
        yield page.encode(when)


def put_event(row_key: bytes, stored: bytes, prev: bytes | None) -> Events:
    """The event of a write that left the row stored as ``stored`` under ``row_key``
    over the live row stored as ``prev`` (None: there was none)."""
    if prev is None:
        return (OP_CREATE, row_key, stored)
    return (OP_UPDATE, row_key, b"".join((_NEW_LENGTH.pack(len(stored)), stored, prev)))


def split_update(data: bytes) -> tuple[bytes, bytes]:
    """The new and the old stored row of an :data:`OP_UPDATE` event's bytes."""
    (n,) = _NEW_LENGTH.unpack_from(data)
    end = _NEW_LENGTH.size + n
    return data[_NEW_LENGTH.size : end], data[end:]


def put_events(row_keys: list[bytes], stored: list[bytes]) -> Events:
    """The events of a batch of new rows stored as ``stored`` under ``row_keys`` (a load)."""
    return (row_keys, stored)


def delete_event(row_key: bytes, prev: bytes, op: int = OP_DELETE) -> Events:
    """The event of the removal of the row stored as ``prev`` under ``row_key``."""
    return (op, row_key, prev)


class FeedSettings:
    """A provider's change-feed settings and when its next retention check is due."""

    check_every = 60.0
    """Seconds between two retention checks of one provider (at most)."""

    def __init__(self, retention: float = DEFAULT_RETENTION) -> None:
        self.retention = retention
        """Seconds events are kept (0: until compacted)."""
        self._next_check = 0.0

    def retention_due(self) -> bool:
        """True (and the next check scheduled) when a retention check should run now."""
        if self.retention <= 0:
            return False
        now = time.monotonic()
        if now < self._next_check:
            return False
        self._next_check = now + min(self.check_every, self.retention / 10)
        return True


def page_time(page: bytes) -> int:
    """The commit time (µs since the epoch) of a stored page."""
    return int(_PAGE_HEAD.unpack_from(page)[0])


class FeedLog:
    """Where a store keeps its change feed and how its commits take revisions.

    This default numbers the commits itself: a counter under ``REVISION``, read and
    rewritten by every commit that records events (sessions are exclusive, so the
    numbers have no gaps), and each revision's pages under :func:`page_key`, in
    revision order, so reading from a revision is one range and compaction one
    range delete. A store whose commits get their numbers from the engine
    underneath overrides it (:meth:`spi.kv.StoreSession.feed_log`).
    """

    def current(self, view: WriteBuffer) -> int:
        """The store's revision as ``view`` sees it (0 before the first)."""
        raw = view.get(REVISION)
        return 0 if raw is None else int(unpack(raw))

    def take(self, buffer: WriteBuffer, pages: list[bytes] | Iterator[bytes], now: int) -> int | None:
        """Add ``pages`` (committed at ``now``, µs; an iterator: a spilled transaction's,
        written as the commit streams them) to ``buffer``'s batch under the commit's
        revision; the revision, or None when the store gives it at commit."""
        known = buffer.known_revision()
        revision = (self.current(buffer) if known is None else known) + 1
        if not isinstance(pages, list):
            numbered = zip(map(_PAGE_KEY.pack, repeat(EVENTS), repeat(revision), count()), pages)
            buffer.append_last_stream(chain(numbered, [(REVISION, pack(revision))]))
            return revision
        keys = list(map(_PAGE_KEY.pack, repeat(EVENTS), repeat(revision), range(len(pages))))
        # Past every row and index key, already in order: the commit appends them unsorted.
        buffer.append_last([*keys, REVISION], [*pages, pack(revision)])
        return revision

    def pages(self, view: WriteBuffer, revision: int, page: int, end: int) -> Generator[tuple[int, int, bytes]]:
        """The stored pages ``(revision, page, bytes)`` from page ``page`` of
        ``revision`` on, up to revision ``end``, in (revision, page) order."""
        for key, value in view.iterate(page_key(revision, page), revision_start(end + 1), False):
            at, number = _PAGE_KEY.unpack(key)[1:]
            yield at, number, value

    def forget_through(self, buffer: WriteBuffer, revision: int) -> bool:
        """Delete every event with a revision <= ``revision`` at commit and record
        it; False when some are left for another transaction (a store's limit)."""
        if revision > compacted_through(buffer):
            buffer.delete_range(EVENTS, revision_start(revision + 1))
            buffer.put(COMPACTED, pack(revision))
        return True

    def forgotten(self, revision: int) -> None:
        """Called once ``compact(revision)`` has committed (a store may compact its
        own history too)."""

    def trim(self, buffer: WriteBuffer, cutoff: int) -> None:
        """Forget the revisions committed before ``cutoff`` (µs), at commit."""
        newest = self.current(buffer)
        lo = compacted_through(buffer) + 1
        if lo > newest or self._commit_time(buffer, lo) >= cutoff:
            return
        hi = newest  # the last revision older than the cutoff is in [lo, hi]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._commit_time(buffer, mid) < cutoff:
                lo = mid
            else:
                hi = mid - 1
        self.forget_through(buffer, lo)

    @staticmethod
    def _commit_time(view: WriteBuffer, revision: int) -> int:
        raw = view.get(page_key(revision, 0))
        return -1 if raw is None else page_time(raw)  # a missing page counts as old


ORDERED_LOG = FeedLog()
"""The engine's own feed log (the default of every store)."""


def log_of(view: WriteBuffer) -> FeedLog:
    """The feed log of the store ``view``'s session belongs to."""
    log = view.feed_log()
    return log if isinstance(log, FeedLog) else ORDERED_LOG


def current_revision(view: WriteBuffer) -> int:
    """The store's revision as ``view`` sees it (0 before the first)."""
    return log_of(view).current(view)


def compacted_through(view: WriteBuffer) -> int:
    """The revision the feed is compacted through: the oldest ``since`` still accepted."""
    raw = view.get(COMPACTED)
    return 0 if raw is None else int(unpack(raw))


def record(buffer: WriteBuffer, settings: FeedSettings) -> int | None:
    """Give ``buffer``'s events the commit's revision, in its own write batch; the
    revision (None: the store gives it at commit)."""
    log = log_of(buffer)
    now = now_micros(SYSTEM_CLOCK)  # the commit's time: the wall clock's, whatever decides expiry
    spilled = buffer.spilled_events()
    pages = _pages(now, buffer.events) if spilled is None else _page_stream(now, chain(spilled, buffer.events))
    if settings.retention_due():  # before the new pages: a trim never looks at them
        log.trim(buffer, now - int(settings.retention * 1_000_000))
    return log.take(buffer, pages, now)


def forget_through(buffer: WriteBuffer, revision: int) -> bool:
    """Delete every event with a revision <= ``revision`` at commit, and record it;
    False when some are left for another transaction."""
    return log_of(buffer).forget_through(buffer, revision)


__all__ = [
    "OP_CREATE",
    "OP_DELETE",
    "OP_EXPIRE",
    "OP_PUT",
    "OP_UPDATE",
    "ORDERED_LOG",
    "PAGE",
    "PUBLIC_OPS",
    "Events",
    "FeedLog",
    "FeedSettings",
    "compacted_through",
    "current_revision",
    "delete_event",
    "forget_through",
    "log_of",
    "page_key",
    "page_time",
    "parse_page",
    "parse_page_key",
    "put_event",
    "put_events",
    "record",
    "revision_start",
    "split_update",
]
