"""Waking the engine's watches from etcd's own ``/v3/watch`` instead of polling,
and keeping the change feed's latest pages for them.

A watch of the engine (:func:`spi.kv.changes.watch`) reads the change feed itself
and, once caught up, waits on the store's change marker
(:meth:`spi.kv.OrderedStore.change_marker`). Every commit to a change-fed table
writes its event pages and rewrites the feed's revision key (``PREFIX/`` +
:data:`spi.kv.layout.REVISION`; see :mod:`providers.etcd.feedlog`), so
:class:`FeedWatch` keeps one gateway watch stream on the feed's keys per store: each
event moves the marker and wakes the waiting watches at once, where the engine's
default would look every :data:`~spi.kv.store.POLL_INTERVAL` seconds.

The stream also keeps the pages it delivers, the last :data:`KEEP_REVISIONS`
revisions (at most :data:`KEEP_BYTES`), so the read a woken watch makes is answered
from memory (:meth:`FeedWatch.recent`): a read from etcd's history would wait for
etcd's history sync (about 100 ms). What it holds is complete from the revision the
stream started at up to the last revision it delivered (etcd delivers a revision's
events together, in revision order); a read outside that goes to etcd.

The stream only wakes the watches; they read the feed themselves, so what must
hold is that no wake-up is missed (an extra one costs a read):

- The first marker reads the feed (etcd revision ``H``) and the stream starts at
  ``H + 1``: a commit after the feed read that follows is an event.
- When the stream ends or fails (the member serving it died), it is opened again on
  the next member from the revision after the last event it delivered (etcd sends
  what happened meanwhile), the marker moves (the watches read again), and the
  reconnect is counted (``watch_reconnects`` in ``p.stats()``) and logged at DEBUG.
  While no stream is open, waits are polls of ``POLL_INTERVAL`` seconds.
- A start revision etcd compacted away: the stream starts again at the compaction
  revision (and the watches read again; the kept pages are dropped).
- A gateway without ``/v3/watch`` (HTTP 404): waits poll, for the life of the store.

The stream runs in a daemon thread, started by the first marker and ended when the
store closes or no watch has waited for :data:`IDLE` seconds (the next marker starts
it again).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from urllib3.exceptions import HTTPError, ReadTimeoutError

from providers.etcd.client import EtcdClient, b64, reason, unb64
from spi.errors import KvError
from spi.kv.layout import EVENTS, REVISION
from spi.kv.store import POLL_INTERVAL
from spi.stats import Counters

log = logging.getLogger(__name__)

IDLE = 10.0
"""Seconds a quiet stream is kept before it is opened again (and the thread ends
when no watch waited meanwhile); also how long a member may take to open one."""
_PAUSE = 0.05
"""Seconds between two rounds over the members while none serves the stream."""
KEEP_REVISIONS = 1024
KEEP_BYTES = 16 * 1024 * 1024
"""The latest revisions whose pages the stream keeps, and their most bytes."""


class _NoWatch(Exception):
    """The gateway has no watch endpoint."""


class FeedWatch:
    """A marker that moves whenever the change feed of the store under ``prefix``
    changes, and the feed's latest pages, from a ``/v3/watch`` stream."""

    def __init__(self, client: EtcdClient, prefix: bytes, *, path: str = "/v3/watch") -> None:
        self._client = client
        self._prefix = prefix
        self._key = prefix + EVENTS
        self._end = prefix + REVISION + b"\x00"
        self._path = path
        self._pages: dict[int, list[tuple[bytes, bytes]]] = {}
        """Revision -> its pages ``(key below the prefix, bytes)``, oldest first."""
        self._kept_bytes = 0
        self._from = 0
        """Every feed event from this revision on, up to :attr:`_through`, is kept (0: none)."""
        self._through = 0
        self.counters: Counters | None = None
        """Where reconnects are counted (the provider's, set when it opens)."""
        self._cond = threading.Condition()
        self._marker = 0
        self._next = 0
        """The etcd revision a (re)opened stream starts at."""
        self.member: int | None = None
        """The index of the member whose stream is open (None: none)."""
        self.unavailable = False
        """True once the gateway turned out to have no watch: waits poll."""
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self._closed = False
        self._used = 0.0
        self._listeners = 0

    # ------------------------------------------------------------- for watches
    def marker(self) -> int | None:
        """The current marker (None: waits poll), starting the stream if needed."""
        with self._cond:
            if self.unavailable or self._closed:
                return None
            self._used = time.monotonic()
            if self._thread is not None:
                return self._marker
        try:
            revision, _, _ = self._client.range(self._key, keys_only=True, limit=1)
        except KvError:
            return None  # the feed read that follows reports it
        with self._cond:
            if self._thread is None and not self._closed:
                self._next = revision + 1
                self._forget(self._next)
                self._thread = threading.Thread(target=self._run, name="kvctl-etcd-watch", daemon=True)
                self._thread.start()
            return self._marker

    def wait(self, marker: int | None, timeout: float) -> None:
        """Return once the marker is no longer ``marker`` or the stream is lost, or
        after ``timeout`` seconds; while no stream is open, after a poll interval."""
        if marker is None:
            time.sleep(min(timeout, POLL_INTERVAL))
            return
        with self._cond:
            self._used = time.monotonic()
            if self.member is None:
                timeout = min(timeout, POLL_INTERVAL)
            self._listeners += 1
            try:
                self._cond.wait_for(lambda: self._marker != marker or self.member is None or self._closed, timeout)
            finally:
                self._listeners -= 1
                self._used = time.monotonic()

    def recent(self, start: int, end: int) -> list[tuple[int, bytes, bytes]] | None:
        """The kept pages ``(revision, key, bytes)`` of revisions ``start..end`` in
        order, when the stream has delivered all of them; else None (read etcd)."""
        with self._cond:
            if self._thread is None or not self._from or start < self._from or end > self._through:
                return None
            found = [(r, key, value) for r, pages in self._pages.items() if start <= r <= end for key, value in pages]
        found.sort()
        return found

    def _forget(self, start: int) -> None:
        """Drop the kept pages: what follows is complete from ``start`` on (0: nothing is)."""
        self._pages.clear()
        self._kept_bytes = 0
        self._from, self._through = start, start - 1 if start else 0

    def _keep(self, revision: int, key: bytes, value: bytes) -> None:
        """Keep one delivered page (the lock is held)."""
        self._pages.setdefault(revision, []).append((key, value))
        self._kept_bytes += len(value)
        while len(self._pages) > KEEP_REVISIONS or self._kept_bytes > KEEP_BYTES:
            oldest = next(iter(self._pages))
            self._kept_bytes -= sum(len(v) for _, v in self._pages.pop(oldest))
            self._from = oldest + 1

    def close(self) -> None:
        """End the stream and its thread."""
        with self._cond:
            self._closed = True
            response, thread = self._response, self._thread
            self._cond.notify_all()
        if response is not None:
            response.shutdown()
        if thread is not None:
            thread.join(1.0)

    # ---------------------------------------------------------------- thread
    def _run(self) -> None:
        n = len(self._client.endpoints)
        i = self._client.current
        lost: str | None = None
        """Why the last open stream ended, until one is open again (a reconnect)."""
        failures = 0
        while True:
            with self._cond:
                idle = time.monotonic() - self._used > IDLE and not self._listeners
                if self._closed or idle:
                    self._thread = None
                    self.member = None
                    self._forget(0)
                    self._cond.notify_all()
                    return
            try:
                self._follow(i, lost)
                lost, failures = None, 0
            except _NoWatch:
                log.debug("etcd at %s has no %s: watches poll", self._client.endpoints[i], self._path)
                with self._cond:
                    self.unavailable, self._thread, self.member = True, None, None
                    self._forget(0)
                    self._cond.notify_all()
                return
            except (HTTPError, OSError, ValueError, KeyError, KvError) as exc:
                with self._cond:
                    if self._closed:
                        continue
                    if self.member is not None:  # an open stream was lost: the watches read again
                        lost = f"{self._client.endpoints[i]}: {reason(exc)}"
                        self.member = None
                        self._marker += 1
                        self._cond.notify_all()
                i = (i + 1) % n
                failures += 1
                if failures % n == 0:
                    time.sleep(_PAUSE)

    def _follow(self, i: int, lost: str | None) -> None:
        """Open a stream on member ``i`` and handle its messages until it is quiet
        for :data:`IDLE` seconds (then return); raise when it fails or ends."""
        body = {"create_request": {"key": b64(self._key), "range_end": b64(self._end), "start_revision": self._next}}
        response = self._client.stream(i, self._path, body, IDLE)
        with self._cond:
            self._response = response
        try:
            if response.status == 404:
                raise _NoWatch
            if response.status != 200:
                raise KvError(f"HTTP {response.status}")
            buffer = b""
            try:
                for chunk in response.stream(None):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip() and self._handle(i, json.loads(line), lost):
                            return
            except ReadTimeoutError:
                if self.member == i:
                    return  # quiet: open it again (or end the thread, unused)
                raise
            raise KvError("the watch stream ended")
        finally:
            with self._cond:
                self._response = None
            response.close()
            response.release_conn()

    def _handle(self, i: int, message: dict[str, Any], lost: str | None) -> bool:
        """Handle one message of the stream; True: open it again here."""
        if "error" in message:
            raise KvError(str(message["error"].get("message", message["error"])))
        result = message.get("result", {})
        compacted = int(result.get("compact_revision", 0))
        with self._cond:
            if result.get("created"):
                self.member = i
                if lost is not None:
                    self._marker += 1  # read again: a reconnect must not miss a wake-up
                    if self.counters is not None:
                        self.counters.add("watch_reconnects")
                    log.debug(
                        "etcd watch reconnected to %s at revision %d (lost %s)",
                        self._client.endpoints[i],
                        self._next,
                        lost,
                    )
            cut = len(self._prefix)
            for event in result.get("events", ()):
                kv = event["kv"]
                revision = int(kv["mod_revision"])
                key = unb64(kv["key"])[cut:]
                if event.get("type") != "DELETE" and key.startswith(EVENTS) and self._from:
                    self._keep(revision, key, unb64(kv.get("value")))
                self._next = max(self._next, revision + 1)
                self._through = max(self._through, revision) if self._from else 0
                self._marker += 1
            if compacted:
                self._next = max(self._next, compacted)
                self._forget(self._next)
                self._marker += 1
            self._cond.notify_all()
        if result.get("canceled") and not compacted:
            raise KvError(f"etcd canceled the watch: {result.get('cancel_reason', '')}")
        return bool(compacted)
