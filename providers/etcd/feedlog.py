"""The change feed on etcd's own revisions.

A commit that writes a change-fed table is one etcd ``Txn``, so it already has one
revision, etcd's, shared by everything it writes; the feed uses it as the events'
revision instead of a counter of its own (which every such commit would read and
rewrite, so that any two of them conflicted):

- The commit puts its event pages (:mod:`spi.kv.feed`'s format) under
  ``EVENTS`` + ``low`` + commit time + a random token + the page number, where ``low``
  is an etcd revision the session saw before committing (its snapshot, else the
  newest this process has seen): the commit's own revision is greater. It also puts
  ``REVISION`` (empty), blind: no compare, so concurrent commits never conflict over
  it. A page's ``mod_revision`` is the commit's revision, and ``REVISION``'s is the
  revision of the last commit that recorded events: ``p.revision()`` (0 before any).
- Reading the events after revision R is reading etcd's history: a ``/v3/watch``
  stream from R + 1 over the feed's keys, closed once it has delivered the revision
  ``REVISION`` had when the read began. It starts no lower than the smallest ``low``
  stored (every kept page's revision is above it), so a read of the whole feed does
  not replay the cluster's older history. etcd hands a watch its past events within
  about 100 ms (its history sync loop), so the process also starts the store's feed
  stream (:class:`providers.etcd.watch.FeedWatch`), which keeps the latest pages as
  they are committed: later reads of them (a woken watch's) are answered from
  memory. When etcd has compacted its history past R
  (an operator's ``--auto-compaction-retention``), the read falls back to a range of
  the kept pages filtered by ``mod_revision`` (one pass over the feed's keys in etcd),
  so nothing is lost: pages are plain keys, kept until the feed forgets them.
- ``prev`` images are the row bytes the writing transaction read and compared by
  ``mod_revision`` in the same ``Txn``: exactly etcd's ``prev_kv`` of that revision,
  kept in the page so they outlive etcd's compaction.
- Forgetting events through R (``compact``, retention) deletes the pages whose
  ``mod_revision`` is <= R (all have ``low`` < R: one key range holds them) and
  records R as the oldest ``since`` accepted; ``compact(R)`` then compacts etcd's own
  history through R (``etcdctl compact R``), which is what frees the space in etcd.
  Retention runs in the commits that record events, a few pages each (every commit
  adds at least one page and removes up to :data:`TRIM_BUDGET`, so it keeps pace).
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import struct
import time
from collections.abc import Generator, Iterator
from typing import Any, Protocol

from urllib3.exceptions import HTTPError

from providers.etcd.client import b64, reason, unb64
from spi.codec import prefix_successor
from spi.errors import ConflictError, KvError, ProviderUnavailableError
from spi.kv.buffer import WriteBuffer
from spi.kv.feed import FeedLog, compacted_through
from spi.kv.layout import COMPACTED, EVENTS, REVISION, pack

_PAGE_KEY = struct.Struct(">QQ8sI")
"""After ``EVENTS``: the revision the committer saw (a lower bound of the commit's),
the commit time (µs), a token of the commit, the page number."""
_LOW = struct.Struct(">Q")
_EVENTS_END = prefix_successor(EVENTS)
TRIM_BUDGET = 4
"""Pages a retention trim deletes in one commit (a load piece keeps room for them)."""
_TRIM_LOOK = 64
"""Page keys a retention trim looks at."""
_FETCH = 64
"""Pages fetched per request when the feed is read from its kept pages."""
_KEYS = 1024
"""Page keys listed per request when the feed is read from its kept pages."""


class FeedSession(Protocol):
    """What the feed needs of an etcd session (:class:`providers.etcd.store.EtcdSession`)."""

    @property
    def store(self) -> Any:
        """The :class:`providers.etcd.store.EtcdStore` (client, prefix, limits)."""

    def low_revision(self) -> int:
        """An etcd revision below that of the session's commit."""

    def mod_revision(self, key: bytes) -> int:
        """``key``'s mod_revision at the session's snapshot (0: absent)."""

    def raw_range(
        self,
        lo: bytes,
        hi: bytes | None,
        *,
        limit: int = 0,
        keys_only: bool = False,
        min_mod: int = 0,
        max_mod: int = 0,
    ) -> tuple[list[tuple[bytes, bytes, int]], bool]:
        """Items at the session's snapshot, not compared at commit."""

    def raw_get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """Values at the session's snapshot, not compared at commit."""


class EtcdFeedLog(FeedLog):
    """The feed of one etcd session (see the module's docstring)."""

    def __init__(self, session: FeedSession) -> None:
        self._session = session

    # ---------------------------------------------------------------- writes
    def current(self, view: WriteBuffer) -> int:
        return self._session.mod_revision(REVISION)

    def take(self, buffer: WriteBuffer, pages: list[bytes] | Iterator[bytes], now: int) -> int | None:
        pages = list(pages)  # a list already: etcd sessions never spill (see WriteBuffer.allow_spill)
        low, token = self._session.low_revision(), os.urandom(8)
        keys = [EVENTS + _PAGE_KEY.pack(low, now, token, i) for i in range(len(pages))]
        buffer.append_last([*keys, REVISION], [*pages, b""])
        return None  # etcd numbers the commit

    def forget_through(self, buffer: WriteBuffer, revision: int, budget: int | None = None) -> bool:
        session = self._session
        if budget is None:
            budget = session.store.max_txn_ops // 2
        lo, hi = EVENTS, EVENTS + _LOW.pack(revision)  # every page of revision <= R has low < R
        doomed: list[bytes] = []
        done = True
        while True:
            found, more = session.raw_range(lo, hi, limit=_FETCH * 4, keys_only=True)
            for key, _, mod in found:
                if mod <= revision:
                    if len(doomed) == budget:
                        done = False
                        break
                    doomed.append(key)
            if not done or not more or not found:
                break
            lo = found[-1][0] + b"\x00"
        for key in doomed:
            buffer.remove(key)
        if revision > compacted_through(buffer):
            buffer.put(COMPACTED, pack(revision))
        return done

    def forgotten(self, revision: int) -> None:
        """Compact etcd's own history through ``revision`` too (what frees its space)."""
        with contextlib.suppress(ConflictError):  # etcd was already compacted further
            self._session.store.client.call("/v3/kv/compaction", {"revision": revision}, write=True)

    def trim(self, buffer: WriteBuffer, cutoff: int) -> None:
        """Forget, a few pages at a time, the revisions committed before ``cutoff``.
        The oldest pages by ``low`` are looked at: the target is the newest revision
        among the old ones, but below the ``low`` of the first young page (or of the
        last page looked at, when more follow), as every page after it is newer."""
        found, more = self._session.raw_range(EVENTS, _EVENTS_END, limit=_TRIM_LOOK, keys_only=True)
        through, bound = 0, None
        for key, _, mod in found:
            low, when = _PAGE_KEY.unpack_from(key, len(EVENTS))[:2]
            if when >= cutoff:
                bound = low
                break
            through = max(through, mod)
        else:
            if more and found:
                bound = _PAGE_KEY.unpack_from(found[-1][0], len(EVENTS))[0]
        if bound is not None:
            through = min(through, bound)
        through = max(through, compacted_through(buffer))  # pages left by an earlier trim go too
        if any(mod <= through for _, _, mod in found):
            self.forget_through(buffer, through, TRIM_BUDGET)

    # ----------------------------------------------------------------- reads
    def pages(self, view: WriteBuffer, revision: int, page: int, end: int) -> Generator[tuple[int, int, bytes]]:
        if revision > end:
            return
        watch = self._session.store.watch
        kept = watch.recent(revision, end)  # a woken watch's read, or a later one
        if kept is not None:
            for mod, key, value in kept:
                number = _PAGE_KEY.unpack_from(key, len(EVENTS))[3]
                if (mod, number) >= (revision, page):
                    yield mod, number, value
            return
        watch.marker()  # keep the pages from now on: this process's next reads need not wait
        first, _ = self._session.raw_range(EVENTS, _EVENTS_END, limit=1, keys_only=True)
        if not first:
            return
        start = max(revision, _PAGE_KEY.unpack_from(first[0][0], len(EVENTS))[0] + 1)
        if start > end:
            return
        try:
            stored = self._history(start, end)
            for mod, key, value in stored:
                number = _PAGE_KEY.unpack_from(key, len(EVENTS))[3]
                if (mod, number) >= (revision, page):
                    yield mod, number, value
        except _Compacted:
            for mod, key, value in self._kept(start, end):
                number = _PAGE_KEY.unpack_from(key, len(EVENTS))[3]
                if (mod, number) >= (revision, page):
                    yield mod, number, value

    def _history(self, start: int, end: int) -> Iterator[tuple[int, bytes, bytes]]:
        """The pages etcd's history holds for revisions ``start..end``, as
        ``(revision, key, bytes)`` in order, from a watch stream (moving to the next
        member, from where it stopped, when one fails or stays silent)."""
        store = self._session.store
        client, prefix = store.client, store.prefix
        cut = len(prefix)
        body: dict[str, Any] = {"key": b64(prefix + EVENTS), "range_end": b64(prefix + REVISION + b"\x00")}
        after: tuple[int, bytes] = (start, b"")  # everything before this is delivered
        deadline = time.monotonic() + client.timeout  # moved on by each delivery
        i = client.current
        last = ""
        while time.monotonic() < deadline:
            body["start_revision"] = after[0]
            try:
                response = client.stream(i, "/v3/watch", {"create_request": body}, client.timeout, dedicated=False)
            except (HTTPError, OSError) as exc:
                last = f"{client.endpoints[i]}: {reason(exc)}"
                i = (i + 1) % len(client.endpoints)
                continue
            try:
                if response.status != 200:
                    raise KvError(f"HTTP {response.status}")
                for result in _results(response):
                    batch, finished = [], False
                    for event in result.get("events", ()):
                        kv = event["kv"]
                        mod = int(kv["mod_revision"])
                        key = unb64(kv["key"])[cut:]
                        if mod > end or (key == REVISION and mod == end):
                            finished = True
                        elif event.get("type") != "DELETE" and key.startswith(EVENTS) and (mod, key) >= after:
                            batch.append((mod, key, unb64(kv.get("value"))))
                    batch.sort()
                    for item in batch:
                        after = (item[0], item[1] + b"\x00")
                        deadline = time.monotonic() + client.timeout
                        yield item
                    if finished:
                        return
                raise KvError("the watch stream ended")
            except (HTTPError, OSError, KvError) as exc:
                last = f"{client.endpoints[i]}: {exc if isinstance(exc, KvError) else reason(exc)}"
                i = (i + 1) % len(client.endpoints)
            finally:
                response.close()
                response.release_conn()
        raise ProviderUnavailableError(
            f"etcd: no member served the change feed's history within {client.timeout:g} s ({last})"
        )

    def _kept(self, start: int, end: int) -> Iterator[tuple[int, bytes, bytes]]:
        """The kept pages of revisions ``start..end`` (when etcd's history no longer
        has them), in revision order, streamed: their keys in a filtered range, in key
        order, which is the order of their ``low``. A page's revision is above its
        ``low``, so once a key with ``low`` L is seen, every page still to come has a
        revision above L: the pages held back with a revision <= L go out in order,
        their bytes a few at a time. Only pages of commits that overlapped wait."""
        session = self._session
        waiting: list[tuple[int, bytes]] = []  # a heap of (revision, key)
        lo = EVENTS
        while True:
            found, more = session.raw_range(lo, _EVENTS_END, limit=_KEYS, keys_only=True, min_mod=start, max_mod=end)
            ready: list[tuple[int, bytes]] = []
            for key, _, mod in found:
                low = _LOW.unpack_from(key, len(EVENTS))[0]
                while waiting and waiting[0][0] <= low:
                    ready.append(heapq.heappop(waiting))
                heapq.heappush(waiting, (mod, key))
            last = not more or not found
            if last:
                ready.extend(heapq.heappop(waiting) for _ in range(len(waiting)))
            for at in range(0, len(ready), _FETCH):
                chunk = ready[at : at + _FETCH]
                values = session.raw_get_many([key for _, key in chunk])
                for (mod, key), value in zip(chunk, values):
                    if value is not None:  # forgotten meanwhile: the reader's compaction check says so
                        yield mod, key, value
            if last:
                return
            lo = found[-1][0] + b"\x00"


class _Compacted(Exception):
    """etcd no longer has the history a read starts at."""


def _results(response: Any) -> Iterator[dict[str, Any]]:
    """The ``result`` of each message of a watch stream (an error message raises)."""
    buffer = b""
    for chunk in response.stream(None):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            message = json.loads(line)
            if "error" in message:
                raise KvError(str(message["error"].get("message", message["error"])))
            result = message.get("result", {})
            if int(result.get("compact_revision", 0)):
                raise _Compacted
            if result.get("canceled") and not int(result.get("compact_revision", 0)):
                raise KvError(f"etcd canceled the watch: {result.get('cancel_reason', '')}")
            yield result


__all__ = ["TRIM_BUDGET", "EtcdFeedLog"]
