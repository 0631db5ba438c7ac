"""Parsing ``rocksdb:`` URLs into a path and options."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from spi.errors import UrlError

DEFAULT_BUSY_TIMEOUT = 5.0
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class RocksUrl:
    """A parsed ``rocksdb:`` URL: an absolute path and the connection options."""

    path: str
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    sync: bool = False


def parse_url(url: str) -> RocksUrl:
    """Parse ``rocksdb:///abs/path`` or ``rocksdb:relative/path`` (relative to the
    current directory) with options ``?busy_timeout=SECONDS&sync=true|false``."""
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
    try:
        options = parse_qs(parts.query, strict_parsing=bool(parts.query), keep_blank_values=True)
    except ValueError:
        raise UrlError(f"malformed query in {url!r}; expected ?busy_timeout=SECONDS&sync=true|false") from None
    unknown = set(options) - {"busy_timeout", "sync"}
    if unknown:
        raise UrlError(f"unknown rocksdb option(s): {', '.join(sorted(unknown))} (known: busy_timeout, sync)")
    timeout = DEFAULT_BUSY_TIMEOUT
    if "busy_timeout" in options:
        text = options["busy_timeout"][-1]
        try:
            timeout = float(text)
        except ValueError:
            timeout = math.nan
        if not math.isfinite(timeout) or timeout < 0:
            raise UrlError(f"busy_timeout must be a non-negative number of seconds, got {text!r}")
    sync = False
    if "sync" in options:
        text = options["sync"][-1].lower()
        if text not in _TRUE | _FALSE:
            raise UrlError(f"sync must be true or false, got {options['sync'][-1]!r}")
        sync = text in _TRUE
    return RocksUrl(path, timeout, sync)
