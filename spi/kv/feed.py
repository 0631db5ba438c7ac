"""The write side of the ordered-store engine's change feed: revisions, the
events' keys, compaction and retention (the key layout is in :mod:`spi.kv.layout`).

A write to a change-fed table appends its event to the transaction's
``WriteBuffer.events``. At commit, :func:`record` reads the store's revision,
takes the next one and puts the revision's header (the commit time), its events
and the new counter into the same write buffer as the rows, so the one atomic
store commit holds all of them: there is never a row without its event nor an
event without its row. Store sessions are exclusive, so the counter read at
commit cannot change before the batch lands: commit order is revision order and
revisions have no gaps.

Compaction (``compact`` and the retention period) range-deletes the oldest events
and records the revision the feed is compacted through. Retention runs at most
once per :attr:`FeedSettings.check_every` seconds per provider, in a commit that
records events: a binary search over the revisions' headers (a few point reads)
finds the last revision older than the period.
"""

from __future__ import annotations

import struct
import time
from itertools import chain, repeat

from spi.kv.buffer import WriteBuffer
from spi.kv.layout import COMPACTED, EVENTS, REVISION, pack, unpack

_EVENT_KEY = struct.Struct(f">{len(EVENTS)}sQI")
_REVISION_KEY = struct.Struct(f">{len(EVENTS)}sQ")

DEFAULT_RETENTION = 7 * 24 * 3600.0
"""Seconds events are kept by default (``?changes_retention=``; 0 keeps them until
``compact``)."""

OP_PUT, OP_DELETE, OP_EXPIRE = 0, 1, 2
"""Stored event operations: positions in :data:`spi.changes.OPS`."""


def event_key(revision: int, seq: int) -> bytes:
    """Store key of event ``seq`` of ``revision`` (0: the revision's header)."""
    return _EVENT_KEY.pack(EVENTS, revision, seq)


def revision_start(revision: int) -> bytes:
    """The smallest store key of ``revision``'s entries (its header)."""
    return _REVISION_KEY.pack(EVENTS, revision)


def parse_event_key(key: bytes) -> tuple[int, int]:
    """(revision, seq) of an event key."""
    _, revision, seq = _EVENT_KEY.unpack(key)
    return revision, seq


def put_event(row_key: bytes, stored: bytes) -> bytes:
    """The stored event of a write that left the row stored as ``stored`` under
    ``row_key``."""
    return pack((OP_PUT, row_key, stored))


def delete_event(row_key: bytes, op: int = OP_DELETE) -> bytes:
    """The stored event of the removal of the row under ``row_key``."""
    return pack((op, row_key, None))


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


def current_revision(view: WriteBuffer) -> int:
    """The store's revision as ``view`` sees it (0 before the first)."""
    raw = view.get(REVISION)
    return 0 if raw is None else int(unpack(raw))


def compacted_through(view: WriteBuffer) -> int:
    """The revision the feed is compacted through: the oldest ``since`` still accepted."""
    raw = view.get(COMPACTED)
    return 0 if raw is None else int(unpack(raw))


def record(buffer: WriteBuffer, settings: FeedSettings) -> int:
    """Give ``buffer``'s events the next revision, in its own write batch; the revision."""
    known = buffer.known_revision()
    revision = (current_revision(buffer) if known is None else known) + 1
    now = time.time_ns() // 1000
    events = buffer.events
    if len(events) == 1:  # the common one-row transaction, without building lists
        buffer.put(_EVENT_KEY.pack(EVENTS, revision, 0), pack(now))
        buffer.put(_EVENT_KEY.pack(EVENTS, revision, 1), events[0])
    else:
        keys = list(map(_EVENT_KEY.pack, repeat(EVENTS), repeat(revision), range(len(events) + 1)))
        buffer.put_many(keys, chain((pack(now),), events))
    buffer.put(REVISION, pack(revision))
    if settings.retention_due():
        _trim(buffer, now - int(settings.retention * 1_000_000), revision - 1)
    return revision


def forget_through(buffer: WriteBuffer, revision: int) -> None:
    """Delete every event with a revision <= ``revision`` at commit, and record it."""
    if revision > compacted_through(buffer):
        buffer.delete_range(EVENTS, revision_start(revision + 1))
        buffer.put(COMPACTED, pack(revision))


def _header_time(view: WriteBuffer, revision: int) -> int:
    raw = view.get(event_key(revision, 0))
    return -1 if raw is None else int(unpack(raw))  # a missing header counts as old


def _trim(buffer: WriteBuffer, cutoff: int, newest: int) -> None:
    """Forget the revisions up to ``newest`` committed before ``cutoff`` (µs)."""
    lo = compacted_through(buffer) + 1
    if lo > newest or _header_time(buffer, lo) >= cutoff:
        return
    hi = newest  # the last revision older than the cutoff is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _header_time(buffer, mid) < cutoff:
            lo = mid
        else:
            hi = mid - 1
    forget_through(buffer, lo)


__all__ = [
    "DEFAULT_RETENTION",
    "FeedSettings",
    "compacted_through",
    "current_revision",
    "delete_event",
    "event_key",
    "forget_through",
    "parse_event_key",
    "put_event",
    "record",
    "revision_start",
]
