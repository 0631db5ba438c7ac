"""Parsing ``rocksdb:`` URLs into a path and options."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from spi.changes import DEFAULT_RETENTION
from spi.errors import UrlError
from spi.sweeper import DEFAULT_SWEEP_INTERVAL
from spi.urloptions import UrlOptions

DEFAULT_BUSY_TIMEOUT = 5.0


@dataclass(frozen=True)
class RocksUrl:
    """A parsed ``rocksdb:`` URL: an absolute path and the connection options."""

    path: str
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    sync: bool = False
    changes_retention: float = DEFAULT_RETENTION
    sweep_interval: float = DEFAULT_SWEEP_INTERVAL


def parse_url(url: str) -> RocksUrl:
    """Parse ``rocksdb:///abs/path`` or ``rocksdb:relative/path`` (relative to the
    current directory) with options ``?busy_timeout=SECONDS&sync=true|false&changes_retention=SECONDS``
    ``&sweep_interval=SECONDS``."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise UrlError(f"malformed rocksdb URL {url!r}: {exc}") from None
    if parts.scheme != "rocksdb":
        raise UrlError(f"not a rocksdb URL: {url!r}")
    if parts.netloc:
        raise UrlError(f"rocksdb URLs take no host: use rocksdb:///absolute/path or rocksdb:relative/path, not {url!r}")
    if parts.fragment:
        raise UrlError(f"rocksdb URLs take no #fragment: {url!r}")
    raw_path = unquote(parts.path)
    if raw_path in ("", "/"):
        raise UrlError(f"rocksdb URL {url!r} names no database directory (e.g. rocksdb:///var/lib/kvctl/db)")
    if "\x00" in raw_path:
        raise UrlError("rocksdb paths cannot contain NUL characters")
    path = os.path.abspath(os.path.expanduser(raw_path))
    options = UrlOptions.parse(parts.query, "rocksdb")
    timeout = options.seconds("busy_timeout", DEFAULT_BUSY_TIMEOUT)
    sync = options.flag("sync", False)
    retention = options.seconds("changes_retention", DEFAULT_RETENTION)
    sweep_interval = options.seconds("sweep_interval", DEFAULT_SWEEP_INTERVAL)
    options.finish()
    return RocksUrl(path, timeout, sync, retention, sweep_interval)
