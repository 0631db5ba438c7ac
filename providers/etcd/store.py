"""The :mod:`spi.kv` ordered store over an etcd cluster, with optimistic sessions.

A session reads everything at one etcd revision ``R0`` (the revision its first read
saw; later reads pass ``revision=R0``), so what a transaction reads is one snapshot.
It remembers what it read:

- every key it saw, with the ``mod_revision`` it had (0: absent);
- every key range a scan covered (the stretch up to the last key it fetched, or the
  whole range once the scan ended).

Its commit is one etcd ``Txn`` whose compares check that none of it changed since
``R0``: each key seen still has the ``mod_revision`` it had (a deleted key has 0, a
rewritten one a newer one, a key first seen absent must still be), and no key in a
scanned range has ``mod_revision > R0`` (a key inserted or rewritten there).
A deletion inside a scanned range is caught by the first kind, as the scan saw the
deleted key. When these compares do not fit in one transaction (more than
``max_txn_ops``, a very large read set), the commit compares instead one key that
every commit rewrites (:data:`COMMIT_KEY`): any commit since ``R0`` then fails it,
which is coarser but just as sound. A failed compare is a :class:`ConflictError`
(``p.run`` and the auto-commit handles retry it). Commits are thus serializable in
etcd revision order: each one's reads were still true when it was applied.

A session that never reads commits blindly (nothing it saw can have changed); a
read-only session commits nothing. Range deletes are sent as etcd delete ranges
(split around keys the same commit writes: etcd refuses a put inside a deleted
range of the same ``Txn``).

Keys live under ``PREFIX/`` (the URL's prefix); :data:`COMMIT_KEY` is
``PREFIX/\\xff\\xffcommit``, above every key the engine uses.

Generations: every catalog change also rewrites :data:`GENERATION_KEY`, whose
``mod_revision`` is the store's generation (:meth:`StoreSession.generation`), so the
engine may trust a table layout it remembered under the same number instead of
reading the catalog. A session reads the key at its snapshot, except a *trusting*
one (a transaction's, a one-off write's) that starts from the generation last seen
in this process and checks it with its first read, in the same request; a wrong
guess is a :class:`ConflictError` (retried: the next attempt reads the catalog) and
the commit compares the key too, so a layout is never used across a catalog change.
One-off reads (:meth:`EtcdStore.get_if_idle`) read the key with the row.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from providers.etcd.client import EtcdClient, b64, items, range_request
from providers.etcd.feedlog import EtcdFeedLog
from providers.etcd.watch import FeedWatch
from spi.errors import ConflictError, TransactionTooLargeError
from spi.kv import OrderedStore, StoreSession
from spi.kv.store import STALE, Stale

T = TypeVar("T")

COMMIT_KEY = b"\xff\xffcommit"
"""Rewritten by every commit (below the prefix): the fallback compare."""
GENERATION_KEY = b"\xff\xffgeneration"
"""Rewritten by every catalog change (below the prefix): its mod_revision is the generation."""
_TOP = b"\xff"
"""Above every key of the engine (``hi=None`` ends here)."""
FIRST_FETCH = 64
MAX_FETCH = 1024
"""Keys a scan fetches per request: the first request, then up to this many."""
_RESERVED_OPS = 8
"""Operations of a commit's budget kept for the commit key and the split of range deletes."""
_OP_OVERHEAD = 16
"""Bytes a protobuf request adds to each operation's key and value (a generous bound)."""


class StaleGeneration(ConflictError):
    """A trusting session's guessed generation was not the store's (a catalog change)."""


class EtcdSession(StoreSession):
    """An optimistic session: snapshot reads at one revision, compared at commit."""

    __slots__ = ("_bump", "_client", "_guess", "_prefix", "_ranges", "_read_only", "_rev", "_seen", "_store")

    def __init__(self, store: EtcdStore, read_only: bool, trusting: bool = False) -> None:
        self._store = store
        self._client = store.client
        self._prefix = store.prefix
        self._read_only = read_only
        self._rev = 0
        """The revision every read is made at (0 before the first read)."""
        self._seen: dict[bytes, int] = {}
        """etcd key -> the mod_revision it had at ``_rev`` (0: absent)."""
        self._ranges: list[list[bytes]] = []
        """``[lo, hi)`` etcd key ranges that scans covered."""
        self._guess: int | None = store.generation if trusting else None
        """The generation this trusting session assumed, until its first read checks it."""
        self._bump = False
        """True when the commit must rewrite :data:`GENERATION_KEY` (a catalog change)."""

    # ------------------------------------------------------------- generation
    def generation(self) -> int | None:
        gen_key = self._store.generation_key
        known = self._seen.get(gen_key)
        if known is not None:
            return known
        if self._guess is not None and not self._rev:
            return self._guess  # checked by the first read
        revision, found, _ = self._client.range(gen_key, revision=self._rev)
        self._at(revision)
        mod = self._seen[gen_key] = found[0][2] if found else 0
        self._store.generation = mod
        return mod

    def advance_generation(self) -> None:
        self._bump = True

    def _range(self, body: dict[str, Any]) -> dict[str, Any]:
        """One RangeRequest's answer; a trusting session's first read also reads the
        generation key, in the same request, and checks its guess."""
        if self._guess is None or self._rev:
            return self._client.call("/v3/kv/range", body)
        _, revision, responses = self._client.txn(
            [], [{"request_range": range_request(self._store.generation_key)}, {"request_range": body}], write=False
        )
        self._at(revision)
        self._check(responses[0])
        return dict(responses[1].get("response_range", {}))

    def _check(self, response: dict[str, Any]) -> None:
        """Compare the generation key in ``response`` with the session's guess."""
        found = items(response.get("response_range", {}))
        mod = found[0][2] if found else 0
        guess, self._guess = self._guess, None
        self._seen[self._store.generation_key] = mod
        if mod != guess:
            self._store.generation = mod
            raise StaleGeneration("etcd: the catalog changed since this process last read it; retry (p.run does)")

    # ------------------------------------------------------------------ reads
    def _at(self, revision: int) -> None:
        if not self._rev:
            self._rev = revision
            if revision > self._store.seen_revision:
                self._store.seen_revision = revision

    @property
    def store(self) -> EtcdStore:
        """The store this session belongs to."""
        return self._store

    def blind_counters(self) -> bool:
        """Yes: concurrent inserts into one table must not all conflict over its counter."""
        return True

    def feed_log(self) -> EtcdFeedLog:
        """The change feed on etcd's revisions (:mod:`providers.etcd.feedlog`)."""
        return EtcdFeedLog(self)

    def low_revision(self) -> int:
        """An etcd revision below that of this session's commit: its snapshot's, else
        the newest this process has seen (0: none yet)."""
        return self._rev or self._store.seen_revision

    def mod_revision(self, key: bytes) -> int:
        """The ``mod_revision`` of ``key`` at this session's snapshot (0: absent),
        without comparing it at commit."""
        found, _ = self.raw_range(key, None, limit=1, keys_only=True)
        return found[0][2] if found else 0

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
        """Items ``(key, value, mod_revision)`` with ``lo <= key < hi`` (``hi`` None:
        ``lo`` alone) at this session's snapshot, and whether more follow; not
        compared at commit (the change feed's own reads)."""
        prefix, cut = self._prefix, len(self._prefix)
        body = range_request(
            prefix + lo,
            None if hi is None else prefix + hi,
            revision=self._rev,
            limit=limit,
            keys_only=keys_only,
            min_mod=min_mod,
            max_mod=max_mod,
        )
        data = self._client.call("/v3/kv/range", body)
        self._at(int(data["header"]["revision"]))
        return [(k[cut:], v, mod) for k, v, mod in items(data)], bool(data.get("more"))

    def raw_get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """The values of ``keys`` at this session's snapshot, in one request, not
        compared at commit."""
        ops = [{"request_range": range_request(self._prefix + k, revision=self._rev)} for k in keys]
        _, revision, responses = self._client.txn([], ops, write=False)
        self._at(revision)
        out: list[bytes | None] = []
        for response in responses:
            found = items(response.get("response_range", {}))
            out.append(found[0][1] if found else None)
        return out

    def get(self, key: bytes) -> bytes | None:
        full = self._prefix + key
        data = self._range(range_request(full, revision=self._rev))
        self._at(int(data["header"]["revision"]) if "header" in data else 0)
        found = items(data)
        if found:
            _, value, mod = found[0]
            self._seen[full] = mod
            return value
        self._seen[full] = 0
        return None

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        if len(keys) < 2:
            return [self.get(k) for k in keys]
        out: list[bytes | None] = []
        step = self._store.max_txn_ops - 1
        for at in range(0, len(keys), step):
            chunk = [self._prefix + k for k in keys[at : at + step]]
            ops = [{"request_range": range_request(k, revision=self._rev)} for k in chunk]
            check = self._guess is not None and not self._rev
            if check:
                ops.insert(0, {"request_range": range_request(self._store.generation_key)})
            _, revision, responses = self._client.txn([], ops, write=False)
            self._at(revision)
            if check:
                self._check(responses.pop(0))
            for full, response in zip(chunk, responses):
                found = items(response.get("response_range", {}))
                if found:
                    self._seen[full] = found[0][2]
                    out.append(found[0][1])
                else:
                    self._seen[full] = 0
                    out.append(None)
        return out

    def iterate(self, lo: bytes, hi: bytes | None, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        return self._scan(lo, hi, reverse, False)

    def keys(self, lo: bytes, hi: bytes | None) -> Iterator[bytes]:
        return (k for k, _ in self._scan(lo, hi, False, True))

    def _scan(self, lo: bytes, hi: bytes | None, reverse: bool, keys_only: bool) -> Iterator[tuple[bytes, bytes]]:
        prefix, cut = self._prefix, len(self._prefix)
        start, end = prefix + lo, prefix + (_TOP if hi is None else hi)
        covered = [end, end] if reverse else [start, start]  # grows as the scan fetches
        if not self._read_only:
            self._ranges.append(covered)
        size = FIRST_FETCH
        seen = self._seen
        while start < end:
            data = self._range(
                range_request(start, end, revision=self._rev, limit=size, descending=reverse, keys_only=keys_only)
            )
            self._at(int(data["header"]["revision"]) if "header" in data else 0)
            found, more = items(data), bool(data.get("more"))
            if more and found:
                if reverse:
                    end = covered[0] = found[-1][0]
                else:
                    start = covered[1] = found[-1][0] + b"\x00"
            elif reverse:
                covered[0] = start
            else:
                covered[1] = end
            for key, _value, mod in found:
                seen[key] = mod
            yield from ((key[cut:], value) for key, value, _ in found)
            if not more or not found:
                return
            size = min(size * 4, MAX_FETCH)

    # ----------------------------------------------------------------- commit
    def commit(self, range_deletes: list[tuple[bytes, bytes]], keys: list[bytes], values: list[bytes | None]) -> None:
        prefix = self._prefix
        store = self._store
        full = [prefix + k for k in keys]
        ops: list[dict[str, Any]] = []
        size = 0
        for lo, hi in range_deletes:
            for a, b in _split(prefix + lo, prefix + hi, full):
                ops.append({"request_delete_range": {"key": b64(a), "range_end": b64(b)}})
                size += len(a) + len(b) + _OP_OVERHEAD
        for key, value in zip(full, values):
            if value is None:
                ops.append({"request_delete_range": {"key": b64(key)}})
                size += len(key) + _OP_OVERHEAD
            else:
                ops.append({"request_put": {"key": b64(key), "value": b64(value)}})
                size += len(key) + len(value) + _OP_OVERHEAD
        if self._bump:
            ops.append({"request_put": {"key": b64(store.generation_key), "value": ""}})
        ops.append({"request_put": {"key": b64(store.commit_key), "value": ""}})
        if len(ops) > store.max_txn_ops:
            raise TransactionTooLargeError(
                f"this transaction writes {len(ops) - 1} etcd keys; one etcd transaction holds at most "
                f"{store.max_txn_ops} operations (max_txn_ops, the members' --max-txn-ops): nothing was written; "
                "split it into smaller transactions"
            )
        compare = self._compares()
        size += sum(len(c["key"]) * 3 // 4 + len(c.get("range_end", "")) * 3 // 4 + 24 for c in compare)
        if size > store.max_request_bytes:
            raise TransactionTooLargeError(
                f"this transaction needs an etcd request of about {size / 1048576:.2f} MiB; etcd takes at most "
                f"{store.max_request_bytes / 1048576:.2f} MiB per request (max_request_bytes, the members' "
                "--max-request-bytes): nothing was written; split it into smaller transactions"
            )
        succeeded, revision, _ = self._client.txn(compare, ops)
        if not succeeded:
            if self._guess is not None:
                store.generation = None  # the guess may be what failed: read the key next time
            raise ConflictError(
                "etcd transaction conflict: a key this transaction read was changed by another commit "
                "since it read it; retry the transaction (p.run does)"
            )
        if self._bump:
            store.generation = revision
        if revision > store.seen_revision:
            store.seen_revision = revision

    def _compares(self) -> list[dict[str, Any]]:
        """The compares that check that nothing this session read has changed (and a
        generation it guessed without reading)."""
        compare: list[dict[str, Any]] = []
        if self._guess is not None:
            key = b64(self._store.generation_key)
            compare.append({"key": key, "target": "MOD", "result": "EQUAL", "mod_revision": self._guess})
        if not self._rev or (not self._seen and not self._ranges):
            return compare
        rev = self._rev
        if len(self._seen) + len(self._ranges) > self._store.max_txn_ops - _RESERVED_OPS:
            key = b64(self._store.commit_key)
            return [{"key": key, "target": "MOD", "result": "LESS", "mod_revision": rev + 1}]
        compare.extend(
            {"key": b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": mod}
            for key, mod in self._seen.items()
        )
        for lo, hi in self._ranges:
            if lo < hi:
                compare.append(
                    {"key": b64(lo), "range_end": b64(hi), "target": "MOD", "result": "LESS", "mod_revision": rev + 1}
                )
        return compare

    def release(self) -> None:
        self._seen = {}
        self._ranges = []


def _split(lo: bytes, hi: bytes, keys: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """``[lo, hi)`` less the (sorted) ``keys`` inside it, as ranges."""
    at = bisect_left(keys, lo)
    while at < len(keys) and keys[at] < hi:
        if lo < keys[at]:
            yield lo, keys[at]
        lo = keys[at] + b"\x00"
        at += 1
    if lo < hi:
        yield lo, hi


class EtcdStore(OrderedStore):
    """An etcd cluster's keys under one prefix, handing out optimistic sessions."""

    def __init__(self, client: EtcdClient, prefix: str, *, max_txn_ops: int, max_request_bytes: int) -> None:
        self.client = client
        self.prefix = prefix.encode() + b"/"
        self.commit_key = self.prefix + COMMIT_KEY
        self.generation_key = self.prefix + GENERATION_KEY
        self.max_txn_ops = max_txn_ops
        self.max_request_bytes = max_request_bytes
        self.generation: int | None = None
        """The generation last seen in this process (None: not yet, or in doubt)."""
        self.seen_revision = 0
        """The newest etcd revision this process has seen (a lower bound of any
        later commit's: :meth:`EtcdSession.low_revision`)."""
        self.watch = FeedWatch(client, self.prefix)
        """What wakes the watches (etcd's watch on the feed's keys) and keeps the
        feed's latest pages for them."""

    def session(self, read_only: bool = False) -> StoreSession:
        return EtcdSession(self, read_only)

    def trusting_session(self) -> EtcdSession:
        """A session that guesses the generation (see the module's docstring): for
        callers that retry a :class:`ConflictError` (transactions, one-off writes)."""
        return EtcdSession(self, False, trusting=True)

    def peek_generation(self) -> int | None:
        return self.generation

    def get_if_idle(self, generation: int, key: bytes) -> bytes | Stale | None:
        """One request reading the generation key and ``key``: STALE when the
        generation is no longer ``generation``. etcd serves any number of readers,
        so "idle" is not needed: the read is a snapshot."""
        ops = [
            {"request_range": range_request(self.generation_key)},
            {"request_range": range_request(self.prefix + key)},
        ]
        _, _, responses = self.client.txn([], ops, write=False)
        found = items(responses[0].get("response_range", {}))
        mod = found[0][2] if found else 0
        if mod != generation:
            self.generation = mod
            return STALE
        row = items(responses[1].get("response_range", {}))
        return row[0][1] if row else None

    def generation_moved(self) -> bool:
        """Whether the generation key has changed since this process last saw it
        (read now; a layout error met with a guessed layout is then retried)."""
        _, found, _ = self.client.range(self.generation_key)
        mod = found[0][2] if found else 0
        moved, self.generation = mod != self.generation, mod
        return moved

    def write_if_idle(self, generation: int, fn: Callable[[StoreSession], T]) -> T | Stale:
        """``fn`` on a trusting session guessing ``generation``; STALE when the guess
        or the commit fails (the caller then runs the write as a retried transaction)."""
        if generation != self.generation:
            return STALE
        session = self.trusting_session()
        try:
            return fn(session)
        except ConflictError:
            return STALE
        finally:
            session.release()

    def change_marker(self) -> Any:
        """See :class:`providers.etcd.watch.FeedWatch` (None: watches poll)."""
        return self.watch.marker()

    def wait_for_change(self, marker: Any, timeout: float) -> None:
        self.watch.wait(marker, timeout)

    def close(self) -> None:
        self.watch.close()
        self.client.close()
