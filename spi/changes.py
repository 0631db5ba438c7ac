"""Change feeds (SPI.md, "Change feed, watch and expiry"): the :class:`Change` event
and what every provider shares to serve ``changes`` and ``watch``.

A table whose spec has ``changes=True`` records every committed write. A store has
one revision counter; each committed transaction that writes a change-fed table
takes the next revision, and its events — one per row per write call, in call
order — carry it. Providers implement where events live and how revisions are
assigned; the argument checks, the key filters and the loop that turns "read what
is new" and "wait for a signal" into a live watch are here, once.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from spi.codec import encode_key
from spi.errors import InvalidFieldError, KvError, SchemaError
from spi.keys import KeyLike, normalize_key, normalize_prefix
from spi.spec import TableSpec

DEFAULT_RETENTION = 7 * 24 * 3600.0
"""Seconds a provider keeps change-feed events by default (``?changes_retention=``;
0 keeps them until ``compact``)."""

PUT = "put"
"""A row was inserted or changed: ``row`` is the whole row after the write."""
DELETE = "delete"
"""A row was deleted: ``row`` and ``version`` are None."""
EXPIRE = "expire"
"""A row's expiry passed and a sweep removed it: ``row`` and ``version`` are None."""
OPS = (PUT, DELETE, EXPIRE)
"""Every event operation; a provider stores one as its position here (0, 1, 2)."""


@dataclass(frozen=True)
class Change:
    """One recorded write of one row (SPI.md ``spi.Change``).

    ``key`` holds the key columns; ``row`` is the whole row after the write (None for
    ``delete`` and ``expire``); ``version`` the row's new version (None likewise);
    ``time`` the commit time, an aware UTC datetime. Every event of one transaction
    has its ``revision``. ``created``: on a put, True when it found no live row (an
    insert), else False; None for delete and expire. ``prev``: the whole row before
    the write (None where there was none), filled only when the reader asked for it
    (``prev=True``). ``expires_at``: the row's expiry after a put (None: never, and
    for delete and expire).
    """

    revision: int
    table: str
    op: str
    key: dict[str, Any]
    row: dict[str, Any] | None
    version: int | None
    time: dt.datetime
    created: bool | None = None
    prev: dict[str, Any] | None = None
    expires_at: dt.datetime | None = None


def check_revision(value: Any, what: str = "since") -> int:
    """A revision argument: a non-negative integer (``InvalidFieldError`` otherwise)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidFieldError(f"{what} must be a revision, a non-negative integer, got {value!r}")
    return value


def check_timeout(value: Any) -> float | None:
    """A ``timeout`` argument: None (wait forever) or non-negative finite seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidFieldError(f"timeout must be a non-negative number of seconds, got {value!r}")
    return float(value)


def check_tables(tables: Any, key: Any, prefix: Any) -> list[str] | None:
    """The ``tables`` argument of ``changes`` as a list of names (None: every
    change-fed table), checked against ``key``/``prefix``, which need exactly one."""
    names: list[str] | None
    if tables is None:
        names = None
    elif isinstance(tables, str):
        names = [tables]
    elif isinstance(tables, Sequence) and all(isinstance(t, str) for t in tables):
        names = list(dict.fromkeys(tables))
    else:
        raise InvalidFieldError(f"tables must be a table name or a list of names, got {tables!r}")
    if key is not None and prefix is not None:
        raise InvalidFieldError("give a key or a key prefix, not both")
    if (key is not None or prefix is not None) and (names is None or len(names) != 1):
        raise InvalidFieldError("a key or key prefix filter needs exactly one table")
    return names


def check_watch(
    table: Any, key: Any, prefix: Any, since: Any, timeout: Any
) -> tuple[list[str], int | None, float | None]:
    """The arguments of ``watch`` checked: its one table (as ``[name]``), ``since``
    (None: from the current revision) and ``timeout`` in seconds (None: no limit)."""
    if not isinstance(table, str):
        raise InvalidFieldError(f"watch takes one table name, got {table!r}")
    names = check_tables(table, key, prefix)
    assert names is not None
    return names, None if since is None else check_revision(since), check_timeout(timeout)


def require_feed(spec: TableSpec) -> TableSpec:
    """``spec`` if its table records a change feed, else a :class:`SchemaError`
    saying how to turn it on."""
    if not spec.changes:
        raise SchemaError(
            f"table {spec.name!r} does not record a change feed; "
            'turn it on with a compatible spec change that sets "changes": true'
        )
    return spec


def no_change_feeds(provider: str) -> KvError:
    """The error of a change-feed call on a provider that does not record them."""
    return KvError(f"{provider} does not record change feeds (it does not declare capability 'changes')")


def chunked(
    first: list[Change], more: bool, read: Callable[[int | None], tuple[list[Change], bool]], limit: int | None
) -> Iterator[Change]:
    """The events of a feed read a chunk at a time: ``first`` (``more``: whether
    another chunk may follow), then ``read(left)`` (at most ``left`` events, None: no
    limit) until the feed or ``limit`` ends."""
    left, events, going = limit, first, more
    while True:
        yield from events
        if left is not None:
            left -= len(events)
            if left <= 0:
                return
        if not going:
            return
        events, going = read(left)


def key_filter(spec: TableSpec, key: KeyLike | None, prefix: KeyLike | None) -> tuple[bytes, bool] | None:
    """The filter of a ``key`` or ``prefix`` argument as ``(encoded key, exact)``:
    an event matches when its encoded key (:func:`spi.codec.encode_key`) equals it
    (``exact``) or starts with it. None: no filter."""
    if key is not None:
        return encode_key(spec.key_types, normalize_key(spec, key)), True
    if prefix is not None:
        return encode_key(spec.key_types, normalize_prefix(spec, prefix)), False
    return None


class ChangeSignal(Protocol):
    """How a watch learns that something may have been committed (any process)."""

    def mark(self) -> Any:
        """A cheap marker of the store's state; it changes with every change-fed commit."""

    def wait(self, marker: Any, timeout: float) -> None:
        """Return once the marker is no longer ``marker`` (or after ``timeout`` seconds)."""


def follow(
    read: Callable[[], tuple[list[Change], bool]],
    signal: ChangeSignal,
    timeout: float | None,
    *,
    recheck: float = 1.0,
) -> Iterator[Change]:
    """The live part of ``watch``: ``read()`` returns events committed since its
    previous call and whether more are already waiting (raising when the table is
    gone); yield them, then, when caught up, wait for the signal and read again.
    Ends after ``timeout`` seconds without an event.

    The marker is taken before each read, so a commit that lands after the read
    changes it and wakes the wait; ``recheck`` seconds bound a wait in any case
    (a store whose signal was missed still delivers, later).
    """
    last = time.monotonic()
    while True:
        marker = signal.mark()
        events, more = read()
        for event in events:
            yield event
            last = time.monotonic()
        if more:
            continue
        wait = recheck
        if timeout is not None:
            left = last + timeout - time.monotonic()
            if left <= 0:
                return
            wait = min(wait, left)
        signal.wait(marker, wait)


__all__ = [
    "DELETE",
    "EXPIRE",
    "OPS",
    "PUT",
    "Change",
    "ChangeSignal",
    "check_revision",
    "check_tables",
    "check_timeout",
    "follow",
    "key_filter",
    "no_change_feeds",
    "require_feed",
]
