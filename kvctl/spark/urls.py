"""Which provider URLs Spark can use (no pyspark import: the CLI checks before starting Spark)."""

from __future__ import annotations

from typing import Any

import spi
from spi.registry import split_scheme


def check_url(url: Any) -> str:
    """The provider URL, refusing ``memory://`` (its data lives in one process)."""
    if not url:
        raise spi.InvalidFieldError('the kvctl data source needs option("url", ...), e.g. rocksdb:///data/kv')
    scheme, _ = split_scheme(str(url))
    if scheme == "memory":
        raise spi.UrlError(
            "memory:// tables live inside one process, so Spark's worker processes cannot see them; "
            "use a rocksdb:// or postgresql:// URL with Spark"
        )
    return str(url)
