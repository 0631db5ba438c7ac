"""Parsing ``postgresql+psycopg://`` URLs into engine settings."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from spi.changes import DEFAULT_RETENTION
from spi.errors import UrlError
from spi.registry import mask_password
from spi.sweeper import DEFAULT_SWEEP_INTERVAL
from spi.urloptions import UrlOptions

DEFAULT_SCHEMA = "kvctl"
CONNECT_TIMEOUT = 5.0
"""Seconds a new connection waits for the server to accept it and answer its startup
(``?connect_timeout=``): a server that is down, unreachable or frozen is reported
unavailable after that long."""
KEEPALIVES: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}
"""libpq's TCP settings for every connection (each can be overridden in the URL): a
connection silent for 10 s is probed every 5 s, and one whose sent data or probes go
unacknowledged for 30 s is dropped, so a dead host or a cut network ends a waiting
statement with an error instead of leaving it waiting for ever."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_POOL_OPTIONS = {"pool_size": 5, "max_overflow": 20}


@dataclass(frozen=True)
class PgSettings:
    """What a URL asks for: the SQLAlchemy URL, the schema and pool sizes."""

    sa_url: Any
    schema: str
    masked: str
    pool: dict[str, int] = field(default_factory=dict)
    connect_args: dict[str, Any] = field(default_factory=dict)
    libpq: dict[str, Any] = field(default_factory=dict)
    """The libpq options of the URL (timeouts, TLS, ``options``...), without kvctl's session settings."""
    connect_timeout: int = 0
    """libpq's ``connect_timeout``: whole seconds, 0 for no limit."""
    sweep_interval: float = DEFAULT_SWEEP_INTERVAL
    """Seconds between background sweeps of expired rows (0: none)."""
    changes_retention: float = DEFAULT_RETENTION
    """Seconds change-feed events are kept (0: until compacted)."""

    @property
    def store_id(self) -> str:
        """``postgresql://HOST:PORT/DATABASE?schema=SCHEMA``: the store, without credentials."""
        url = self.sa_url
        host = str(url.host or self.libpq.get("host") or "localhost").lower()
        port = url.port or self.libpq.get("port") or 5432
        return f"postgresql://{host}:{port}/{url.database}?schema={self.schema}"


def validate_schema(name: str) -> str:
    """Check a ``?schema=`` value: a plain identifier, not PostgreSQL-reserved."""
    if not _IDENTIFIER.match(name) or len(name.encode()) > 63:
        raise UrlError(
            f"schema name {name!r} is invalid: use letters, digits and _ (at most 63), not starting with a digit"
        )
    if name.lower().startswith("pg_"):
        raise UrlError(f"schema name {name!r} is reserved by PostgreSQL (names starting with 'pg_')")
    return name


def parse_url(url: str) -> PgSettings:
    """Split a provider URL into engine settings; :class:`UrlError` if malformed.

    Query options: ``schema`` (default ``kvctl``), ``pool_size``, ``max_overflow``,
    ``connect_timeout`` (seconds, default 5), ``statement_timeout`` (seconds, default:
    the server's); any other option is passed to libpq (``sslmode``, ``options``...).
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    masked = mask_password(url)
    try:
        parsed = make_url(url)
        parsed.port  # noqa: B018 - raises on a non-numeric port
    except (ArgumentError, ValueError):
        raise UrlError(
            f"malformed PostgreSQL URL {masked!r}; expected postgresql+psycopg://user@host:port/db"
        ) from None
    if not parsed.database:
        raise UrlError(f"PostgreSQL URL {masked!r} names no database: add /DBNAME after the host")
    # SQLAlchemy's parse, not urlsplit: a password may hold an unencoded "?" or "#".
    pairs = ((k, v[-1] if isinstance(v, tuple) else v) for k, v in parsed.query.items())
    options = UrlOptions(pairs, "PostgreSQL")
    schema = validate_schema(options.text("schema", DEFAULT_SCHEMA))
    pool = {option: options.count(option, default) for option, default in _POOL_OPTIONS.items()}
    connect_timeout = _libpq_seconds(options.seconds("connect_timeout", CONNECT_TIMEOUT))
    statement_timeout = options.seconds("statement_timeout", None)
    sweep_interval = options.seconds("sweep_interval", DEFAULT_SWEEP_INTERVAL)
    retention = options.seconds("changes_retention", DEFAULT_RETENTION)
    libpq: dict[str, Any] = {"application_name": "kvctl", **KEEPALIVES, **options.rest()}
    libpq["connect_timeout"] = connect_timeout
    if statement_timeout is not None:
        # milliseconds on the server, where 0 means no limit: a positive value stays positive
        milliseconds = max(1, round(statement_timeout * 1000)) if statement_timeout else 0
        libpq["options"] = f"{libpq.get('options', '')} -c statement_timeout={milliseconds}".strip()
    session = f"{libpq.get('options', '')} -c timezone=UTC -c default_transaction_isolation=serializable".strip()
    connect_args = {**libpq, "options": session}
    return PgSettings(
        parsed.set(query={}), schema, masked, pool, connect_args, libpq, connect_timeout, sweep_interval, retention
    )


def _libpq_seconds(seconds: float) -> int:
    """A ``connect_timeout`` as libpq and psycopg count it: whole seconds, at least 2
    (rounded up); 0 means no limit."""
    return 0 if seconds == 0 else max(2, math.ceil(seconds))
