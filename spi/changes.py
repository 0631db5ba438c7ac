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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from spi.codec import encode_key
from spi.errors import InvalidFieldError, KvError, SchemaError
from spi.keys import KeyLike, Range, normalize_key, normalize_prefix
from spi.spec import TableSpec
from spi.types import describe

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


@dataclass(frozen=True)
class Progress:
    """A watch's bookmark (``watch(progress=SECONDS)``, and after an ``initial``
    snapshot): every matching event with a revision <= ``revision`` has been yielded,
    so a watch restarted with ``since=revision`` misses nothing."""

    revision: int


class Wanted(NamedTuple):
    """What a reader of a feed keeps and decodes: ``ops`` the kept operations as
    positions in :data:`OPS` (None: all), ``prev`` whether events carry the row before
    the write."""

    ops: frozenset[int] | None = None
    prev: bool = False

    def keeps(self, op: int) -> bool:
        """True if events of operation ``op`` (a position in :data:`OPS`) are kept."""
        return self.ops is None or op in self.ops


def check_wanted(prev: Any, ops: Any) -> Wanted:
    """The ``prev`` and ``ops`` arguments of ``changes``/``watch``: ``prev`` a bool,
    ``ops`` None or an iterable of ``"put"``, ``"delete"``, ``"expire"`` (one name
    alone is accepted too); anything else is an :class:`InvalidFieldError`."""
    if not isinstance(prev, bool):
        raise InvalidFieldError(f"prev must be True or False, got {prev!r}")
    if ops is None:
        return Wanted(None, prev)
    names = [ops] if isinstance(ops, str) else ops
    if not isinstance(names, Iterable):
        raise InvalidFieldError(f"ops must be a set of operations ({', '.join(OPS)}), got {ops!r}")
    kept = []
    for op in names:
        if op not in OPS:
            raise InvalidFieldError(f"ops may name only {', '.join(OPS)}, got {op!r}")
        kept.append(OPS.index(op))
    return Wanted(frozenset(kept), prev)


MAX_REVISION = 2**63 - 1
"""The largest revision (a signed 64-bit integer, as every provider stores it)."""


def check_revision(value: Any, what: str = "since") -> int:
    """A revision argument: an integer from 0 to :data:`MAX_REVISION` (``InvalidFieldError`` otherwise)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_REVISION:
        raise InvalidFieldError(
            f"{what} must be a revision, an integer from 0 to {MAX_REVISION}, got {describe(value)}"
        )
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


class WatchArgs(NamedTuple):
    """The checked arguments of ``watch``."""

    names: list[str]
    """Its one table, as ``[name]``."""
    since: int | None
    """Where it starts (None: the current revision)."""
    timeout: float | None
    """Seconds without a matching event before it ends (None: never)."""
    wanted: Wanted
    """The ops it keeps and whether events carry ``prev``."""
    progress: float | None
    """Seconds between :class:`Progress` bookmarks while nothing matches (None: none)."""
    initial: bool
    """Whether it starts with the live rows (:func:`with_initial`)."""


def check_watch(
    table: Any,
    key: Any,
    prefix: Any,
    since: Any,
    timeout: Any,
    prev: Any = False,
    ops: Any = None,
    progress: Any = None,
    initial: Any = False,
) -> WatchArgs:
    """The arguments of ``watch`` checked (:class:`InvalidFieldError` on a bad one)."""
    if not isinstance(table, str):
        raise InvalidFieldError(f"watch takes one table name, got {table!r}")
    names = check_tables(table, key, prefix)
    assert names is not None
    if progress is not None and (
        isinstance(progress, bool)
        or not isinstance(progress, (int, float))
        or not math.isfinite(progress)
        or progress <= 0
    ):
        raise InvalidFieldError(f"progress must be a positive number of seconds, got {progress!r}")
    if not isinstance(initial, bool):
        raise InvalidFieldError(f"initial must be True or False, got {initial!r}")
    if initial and since is not None:
        raise InvalidFieldError("initial starts at the revision its rows are read at: give initial or since, not both")
    return WatchArgs(
        names,
        None if since is None else check_revision(since),
        check_timeout(timeout),
        check_wanted(prev, ops),
        None if progress is None else float(progress),
        initial,
    )


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
    position: Callable[[], int],
    signal: ChangeSignal,
    args: WatchArgs,
    *,
    recheck: float = 1.0,
) -> Iterator[Change | Progress]:
    """The live part of ``watch``: ``read()`` returns the matching events committed
    since its previous call and whether more are already waiting (raising when the
    table is gone); yield them, then, when caught up, wait for the signal and read
    again. Ends after ``args.timeout`` seconds without an event. With
    ``args.progress``, a caught-up read that comes ``progress`` seconds after the last
    line yields ``Progress(position())``: ``position()`` is the revision the reader has
    read everything up to (the store's revision at that read).

    The marker is taken before each read, so a commit that lands after the read
    changes it and wakes the wait; ``recheck`` seconds bound a wait in any case
    (a store whose signal was missed still delivers, later).
    """
    timeout, progress = args.timeout, args.progress
    last = quiet = time.monotonic()  # the last event (timeout); the last line (progress)
    while True:
        marker = signal.mark()
        events, more = read()
        for event in events:
            yield event
            last = quiet = time.monotonic()
        if more:
            continue
        now = time.monotonic()
        if progress is not None and now - quiet >= progress:
            yield Progress(position())
            quiet = now
        wait = recheck
        if timeout is not None:
            left = last + timeout - now
            if left <= 0:
                return
            wait = min(wait, left)
        if progress is not None:
            wait = min(wait, quiet + progress - now)
        signal.wait(marker, wait)


class FeedReader(Protocol):
    """What :func:`watching` needs of a provider (any :class:`spi.protocols.Provider`)."""

    @property
    def admin(self) -> Any:
        """The provider's admin (``get_spec``)."""

    def revision(self) -> int:
        """The store's current revision."""

    def changes(self, tables: str, *, since: int, key: Any, prefix: Any) -> Iterator[Change]:
        """Recorded events after ``since``."""

    def table(self, name: str) -> Any:
        """An auto-commit handle of ``name``."""


def watching(
    provider: FeedReader,
    args: WatchArgs,
    key: KeyLike | None,
    prefix: KeyLike | None,
    live: Callable[[WatchArgs], Iterator[Change | Progress]],
) -> Iterator[Change | Progress]:
    """A provider's ``watch``: ``live(args)`` (the provider's reader of the events
    after ``args.since``), after the live rows when ``args.initial`` (see
    :func:`_with_initial`; the table and the key are checked now)."""
    if not args.initial:
        return live(args)
    spec = require_feed(provider.admin.get_spec(args.names[0]))
    key_filter(spec, key, prefix)
    return _with_initial(provider, spec, key, prefix, args, live)


def _with_initial(
    provider: FeedReader,
    spec: TableSpec,
    key: KeyLike | None,
    prefix: KeyLike | None,
    args: WatchArgs,
    live: Callable[[WatchArgs], Iterator[Change | Progress]],
) -> Iterator[Change | Progress]:
    """``watch(initial=True)``: the live rows matching ``key``/``prefix`` as put
    events (``created`` True, no ``prev``) at the revision R they stand at, then
    ``Progress(R)``, then the events after R.

    Written once over the public API of any provider: R0 is read, the rows scanned
    (page by page, not a snapshot), R read again; the recorded events in (R0, R]
    (written during the scan) are applied over what the scan met, which gives the
    rows exactly as they stood at R. Their ``time`` is the time of the read.
    """
    start = provider.revision()
    handle = provider.table(spec.name)
    scope: Range | None = None
    if key is not None or prefix is not None:
        scope = Range.singleton(key) if key is not None else Range.prefix(prefix)  # type: ignore[arg-type]
    names, types = spec.primary_key, spec.key_types
    rows: dict[tuple[Any, ...], tuple[dict[str, Any], int, dt.datetime | None]] = {}
    for row in handle.scan(scope):
        values = dict(row)
        rows[tuple(values[k] for k in names)] = (values, row.version, row.expires_at)
    at = provider.revision()
    for event in provider.changes(spec.name, since=start, key=key, prefix=prefix):
        if event.revision > at:
            break
        k = tuple(event.key[c] for c in names)
        if event.row is None or event.version is None:
            rows.pop(k, None)
        else:
            rows[k] = (event.row, event.version, event.expires_at)
    now = dt.datetime.now(dt.UTC)
    if args.wanted.keeps(0):
        for k in sorted(rows, key=lambda k: encode_key(types, k)):
            values, version, expires = rows[k]
            yield Change(at, spec.name, PUT, dict(zip(names, k)), values, version, now, True, None, expires)
    yield Progress(at)
    yield from live(args._replace(since=at))


__all__ = [
    "DELETE",
    "EXPIRE",
    "MAX_REVISION",
    "OPS",
    "PUT",
    "Change",
    "ChangeSignal",
    "FeedReader",
    "Progress",
    "Wanted",
    "WatchArgs",
    "check_revision",
    "check_tables",
    "check_timeout",
    "check_wanted",
    "check_watch",
    "follow",
    "key_filter",
    "no_change_feeds",
    "require_feed",
    "watching",
]
