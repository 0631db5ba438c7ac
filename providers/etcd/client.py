"""A small client of etcd's v3 HTTP/JSON gateway (``/v3/kv/range``, ``/v3/kv/txn``...).

Why the gateway and urllib3: every etcd 3.4+ member serves the gateway on its client
port, so the provider needs no gRPC stack or generated protobuf code (the Python
gRPC clients of etcd are unmaintained and pin old protobuf versions); urllib3 is a
well-kept HTTP client with thread-safe keep-alive connection pools and separate
connect and read timeouts, which is all the failover logic below needs.

Failover: calls go to the member that answered last; a member that refuses the
connection, does not answer in time, or says it has no leader is skipped for the
next one, round after round, until the provider's ``timeout`` has passed. Then
the call fails as :class:`ProviderUnavailableError`: "no member reachable" when
none accepted a connection, else "no quorum". A write (``txn``) is resent to another
member only when the first could not have applied it (the connection was refused,
or etcd said it had no leader or dropped the proposal); after a timeout on a write
its outcome is unknown, and the error says so (etcd transactions are atomic: it
was applied whole or not at all).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from spi.errors import ConflictError, KvError, ProviderUnavailableError, TransactionTooLargeError

_RETRY_PAUSE = 0.05
"""Seconds between two rounds over the members."""
_NEVER_APPLIED = (
    "no leader",
    "raft proposal dropped",
    "not capable",
    "too many requests",
    "server stopped",
    "unhealthy cluster",
)
"""etcd errors that mean the request was not applied: safe to send again."""
_READ_RETRYABLE = (*_NEVER_APPLIED, "leader changed", "request timed out", "future revision", "timed out")
"""etcd errors after which a read is sent again (reads change nothing)."""
_TOO_LARGE = ("request is too large", "too many operations", "larger than max", "resourceexhausted")


def b64(data: bytes) -> str:
    """``data`` as the gateway spells bytes."""
    return base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes:
    """Bytes the gateway sent (absent: empty)."""
    return base64.b64decode(text) if text else b""


class _Ambiguous(ProviderUnavailableError):
    """A write whose outcome is unknown (sent, no answer)."""


class EtcdClient:
    """Calls to one etcd cluster through its members' HTTP gateways (thread-safe)."""

    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        timeout: float,
        user: str | None = None,
        password: str | None = None,
        masked_url: str = "etcd://",
    ) -> None:
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self._user = user
        self._password = password
        self._masked = masked_url
        self._pools = [_pool(host, 32) for host in self.endpoints]
        self._stream_pools = [_pool(host, 1) for host in self.endpoints]
        """One connection per member for :meth:`stream` (kept apart from the calls')."""
        self._current = 0
        self._token: str | None = None
        self._auth_lock = threading.Lock()

    @property
    def current(self) -> int:
        """The index of the member that answered last (where calls go first)."""
        return self._current

    def close(self) -> None:
        """Close every pooled connection."""
        for pool in (*self._pools, *self._stream_pools):
            pool.close()

    # ------------------------------------------------------------------ calls
    def call(self, path: str, body: dict[str, Any], *, write: bool = False) -> dict[str, Any]:
        """POST ``body`` to ``path`` on a live member and return the decoded answer
        (see the module's docstring for failover; ``write``: the call changes data)."""
        deadline = time.monotonic() + self.timeout
        payload = json.dumps(body, separators=(",", ":")).encode()
        refused = answered = 0
        last = ""
        start = self._current
        n = len(self._pools)
        attempt = 0
        while True:
            i = (start + attempt) % n
            attempt += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                # A read gives each member a share of the time (one whose leader died
                # may hang until it gives up); a write's outcome is unknown after a timeout.
                wait = remaining if write else min(remaining, max(1.0, self.timeout / 3))
                status, data = self._post(i, path, payload, wait)
            except (NewConnectionError, ConnectTimeoutError) as exc:
                refused += 1
                last = f"{self.endpoints[i]}: {reason(exc)}"
            except (ReadTimeoutError, ProtocolError, HTTPError) as exc:
                answered += 1
                last = f"{self.endpoints[i]}: {reason(exc)}"
                if write:
                    raise self._unknown(last) from None
            else:
                if status == 200:
                    self._current = i
                    return data
                message = str(data.get("error") or data.get("message") or f"HTTP {status}")
                lowered = message.lower()
                if "invalid auth token" in lowered and self._user:
                    self._token = None
                    continue
                if any(s in lowered for s in _TOO_LARGE):
                    raise TransactionTooLargeError(
                        f"etcd refused the transaction: {message} (the members' --max-txn-ops or "
                        "--max-request-bytes; ?max_txn_ops= and ?max_request_bytes= tell kvctl a cluster's "
                        "limits): nothing was written"
                    )
                if "compacted" in lowered:
                    raise ConflictError(f"etcd compacted the revision this transaction reads at ({message}); retry")
                if "authentication failed" in lowered or "permission denied" in lowered:
                    raise ProviderUnavailableError(f"etcd at {self._masked} refused the credentials: {message}")
                retryable = _READ_RETRYABLE if not write else _NEVER_APPLIED
                if not any(s in lowered for s in retryable):
                    if write and any(s in lowered for s in _READ_RETRYABLE):
                        raise self._unknown(f"{self.endpoints[i]}: {message}")
                    raise KvError(f"etcd at {self.endpoints[i]} failed: {message}")
                answered += 1
                last = f"{self.endpoints[i]}: {message}"
            if attempt % n == 0:
                time.sleep(min(_RETRY_PAUSE, max(0.0, deadline - time.monotonic())))
        if answered == 0:
            raise ProviderUnavailableError(
                f"no etcd member reachable at {self._masked} within {self.timeout:g} s ({last}); "
                "check that the cluster is running"
            )
        raise ProviderUnavailableError(
            f"the etcd cluster at {self._masked} has no quorum: no member served the request within "
            f"{self.timeout:g} s ({last}); a majority of the members must be up"
        )

    def _unknown(self, detail: str) -> ProviderUnavailableError:
        return _Ambiguous(
            f"etcd at {self._masked} did not answer a commit ({detail}): the cluster may have no quorum; "
            "the transaction was applied whole or not at all, and which is unknown"
        )

    def _headers(self, i: int, remaining: float) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._user:
            headers["Authorization"] = self._auth(i, remaining)
        return headers

    def _post(self, i: int, path: str, payload: bytes, remaining: float) -> tuple[int, dict[str, Any]]:
        timeout = urllib3.Timeout(connect=min(1.0, remaining), read=remaining)
        headers = self._headers(i, remaining)
        response = self._pools[i].urlopen("POST", path, body=payload, headers=headers, timeout=timeout)
        try:
            data = json.loads(response.data) if response.data else {}
        except ValueError:
            data = {"error": response.data[:200].decode("utf-8", "replace")}
        return response.status, data

    def _auth(self, i: int, remaining: float) -> str:
        """The auth token (fetched from member ``i`` when there is none)."""
        with self._auth_lock:
            if self._token is None:
                body = json.dumps({"name": self._user, "password": self._password or ""}).encode()
                response = self._pools[i].urlopen(
                    "POST",
                    "/v3/auth/authenticate",
                    body=body,
                    headers={"Content-Type": "application/json"},
                    timeout=urllib3.Timeout(connect=min(1.0, remaining), read=remaining),
                )
                data = json.loads(response.data or b"{}")
                if response.status != 200:
                    message = str(data.get("error") or data.get("message") or response.status)
                    if "authentication is not enabled" in message:
                        self._token = ""
                    else:
                        raise ProviderUnavailableError(f"etcd at {self._masked} refused the credentials: {message}")
                else:
                    self._token = str(data.get("token", ""))
            return self._token

    def stream(
        self, i: int, path: str, body: dict[str, Any], idle: float, *, dedicated: bool = True
    ) -> urllib3.BaseHTTPResponse:
        """POST ``body`` to member ``i`` and return the response unread (a stream of
        JSON lines, e.g. ``/v3/watch``'s: read it with ``stream()`` and close it); a
        read waits at most ``idle`` seconds. ``dedicated``: on the member's one
        long-lived stream connection (else on the calls' pool: a short stream).
        Raises urllib3's errors as they are."""
        payload = json.dumps(body, separators=(",", ":")).encode()
        timeout = urllib3.Timeout(connect=min(1.0, self.timeout), read=idle)
        headers = self._headers(i, self.timeout)
        pool = self._stream_pools[i] if dedicated else self._pools[i]
        return pool.urlopen("POST", path, body=payload, headers=headers, timeout=timeout, preload_content=False)

    # -------------------------------------------------------------- kv calls
    def range(
        self,
        key: bytes,
        range_end: bytes | None = None,
        *,
        revision: int = 0,
        limit: int = 0,
        descending: bool = False,
        keys_only: bool = False,
    ) -> tuple[int, list[tuple[bytes, bytes, int]], bool]:
        """The header revision, the items ``(key, value, mod_revision)`` and whether more follow."""
        body = range_request(key, range_end, revision=revision, limit=limit, descending=descending, keys_only=keys_only)
        data = self.call("/v3/kv/range", body)
        return int(data["header"]["revision"]), items(data), bool(data.get("more"))

    def txn(
        self, compare: list[dict[str, Any]], success: list[dict[str, Any]], *, write: bool = True
    ) -> tuple[bool, int, list[dict[str, Any]]]:
        """Run a transaction: whether its compares held, the header revision, the responses."""
        data = self.call("/v3/kv/txn", {"compare": compare, "success": success}, write=write)
        return bool(data.get("succeeded")), int(data["header"]["revision"]), data.get("responses", [])


def range_request(
    key: bytes,
    range_end: bytes | None = None,
    *,
    revision: int = 0,
    limit: int = 0,
    descending: bool = False,
    keys_only: bool = False,
    min_mod: int = 0,
    max_mod: int = 0,
) -> dict[str, Any]:
    """The JSON of a RangeRequest (``min_mod``/``max_mod``: only keys whose
    ``mod_revision`` is in that range; etcd then reads the whole range)."""
    body: dict[str, Any] = {"key": b64(key)}
    if range_end is not None:
        body["range_end"] = b64(range_end)
    if revision:
        body["revision"] = revision
    if limit:
        body["limit"] = limit
    if descending:
        body["sort_order"] = "DESCEND"
        body["sort_target"] = "KEY"
    if keys_only:
        body["keys_only"] = True
    if min_mod:
        body["min_mod_revision"] = min_mod
    if max_mod:
        body["max_mod_revision"] = max_mod
    return body


def items(data: dict[str, Any]) -> list[tuple[bytes, bytes, int]]:
    """The ``(key, value, mod_revision)`` of a range answer."""
    return [(unb64(kv["key"]), unb64(kv.get("value")), int(kv["mod_revision"])) for kv in data.get("kvs", ())]


def _pool(endpoint: str, size: int) -> urllib3.HTTPConnectionPool:
    """A keep-alive pool of up to ``size`` connections to ``endpoint`` (``host:port``)."""
    host, port = endpoint.rsplit(":", 1)
    return urllib3.HTTPConnectionPool(host.strip("[]"), int(port), maxsize=size, block=False, retries=False)


def reason(exc: Exception) -> str:
    """A short text for a urllib3 error (its cause, without the object's repr)."""
    text = str(exc.__cause__ or exc.args[-1] if exc.args else exc)
    return text.split(": ", 1)[-1][:160] if text else type(exc).__name__
