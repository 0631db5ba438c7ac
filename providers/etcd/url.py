"""Parsing ``etcd://`` URLs into members, a key prefix, credentials and options."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from spi.changes import DEFAULT_RETENTION
from spi.errors import UrlError
from spi.registry import mask_password
from spi.sweeper import DEFAULT_SWEEP_INTERVAL
from spi.urloptions import UrlOptions

DEFAULT_PREFIX = "kvctl"
DEFAULT_TIMEOUT = 5.0
DEFAULT_MAX_TXN_OPS = 128
"""etcd's default ``--max-txn-ops``: the operations one etcd transaction may hold."""
DEFAULT_MAX_REQUEST_BYTES = 1536 * 1024
"""etcd's default ``--max-request-bytes`` (1.5 MiB)."""

_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}\Z")
_PREFIX = re.compile(r"[A-Za-z0-9._~-]+(?:/[A-Za-z0-9._~-]+)*\Z")


@dataclass(frozen=True)
class EtcdUrl:
    """A parsed ``etcd://`` URL."""

    endpoints: tuple[str, ...]
    """``host:port`` of each member, in URL order."""
    prefix: str = DEFAULT_PREFIX
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    """Seconds a call may take before it fails as unavailable (no quorum, no member)."""
    max_txn_ops: int = DEFAULT_MAX_TXN_OPS
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    changes_retention: float = DEFAULT_RETENTION
    sweep_interval: float = DEFAULT_SWEEP_INTERVAL

    @property
    def masked(self) -> str:
        """The URL without the password (safe to print)."""
        auth = f"{self.user}:***@" if self.password is not None else (f"{self.user}@" if self.user else "")
        return f"etcd://{auth}{','.join(self.endpoints)}/{self.prefix}"


def parse_url(url: str) -> EtcdUrl:
    """Parse ``etcd://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][/PREFIX][?options]``.

    Options: ``timeout=SECONDS`` (default 5), ``max_txn_ops=N`` (default 128, etcd's: the
    members' ``--max-txn-ops``), ``max_request_bytes=N`` (default 1.5 MiB: their
    ``--max-request-bytes``), ``changes_retention=SECONDS``, ``sweep_interval=SECONDS``.
    """
    safe = mask_password(url)
    if not url.startswith("etcd://"):
        raise UrlError(f"not an etcd URL: {safe!r} (expected etcd://HOST:PORT[,HOST:PORT...][/PREFIX])")
    rest = url[len("etcd://") :]
    rest, _, fragment = rest.partition("#")
    if fragment:
        raise UrlError(f"etcd URLs take no #fragment: {safe!r}")
    rest, _, query = rest.partition("?")
    user = password = None
    if "@" in rest:
        userinfo, rest = rest.rsplit("@", 1)
        name, has_password, secret = userinfo.partition(":")
        user = unquote(name)
        password = unquote(secret) if has_password else None
        if not user:
            raise UrlError(f"etcd URL {safe!r} gives a password without a user name")
    hosts, _, path = rest.partition("/")
    endpoints = tuple(h for h in hosts.split(","))
    if not hosts or not all(_HOST.match(h) for h in endpoints):
        raise UrlError(
            f"etcd URL {safe!r} must name the members as HOST:PORT[,HOST:PORT...] (e.g. etcd://127.0.0.1:2379)"
        )
    if any(not 0 < int(h.rsplit(":", 1)[1]) < 65536 for h in endpoints):
        raise UrlError(f"etcd URL {safe!r} has a port outside 1-65535")
    given = unquote(path)
    prefix = given.removesuffix("/") or DEFAULT_PREFIX
    odd = next((part for part in prefix.split("/") if part in ("", ".", "..")), None)
    if odd is not None:
        raise UrlError(
            f"etcd key prefix {given!r} has {'an empty part' if not odd else f'a {odd!r} part'}: "
            "a prefix is names joined by single '/' (e.g. etcd://127.0.0.1:2379/team/app)"
        )
    if not _PREFIX.match(prefix):
        raise UrlError(
            f"etcd key prefix {prefix!r} may hold only letters, digits, '.', '_', '~', '-' and '/' between parts"
        )
    options = UrlOptions.parse(query, "etcd")
    timeout = options.seconds("timeout", DEFAULT_TIMEOUT)
    if timeout <= 0:
        raise UrlError("timeout must be a positive number of seconds")
    max_ops = options.count("max_txn_ops", DEFAULT_MAX_TXN_OPS)
    max_bytes = options.count("max_request_bytes", DEFAULT_MAX_REQUEST_BYTES)
    if max_ops < 64 or max_bytes < 64 * 1024:
        raise UrlError("max_txn_ops must be at least 64 and max_request_bytes at least 65536")
    retention = options.seconds("changes_retention", DEFAULT_RETENTION)
    sweep_interval = options.seconds("sweep_interval", DEFAULT_SWEEP_INTERVAL)
    options.finish()
    return EtcdUrl(endpoints, prefix, user, password, timeout, max_ops, max_bytes, retention, sweep_interval)
