"""Turning driver exceptions into :mod:`spi.errors` (never leaking a password)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from spi.errors import (
    ConflictError,
    InvalidFieldError,
    KvError,
    LimitExceededError,
    ProviderUnavailableError,
    TableNotFoundError,
)

CONFLICT_STATES = {"40001", "40P01", "23505", "55P03"}
"""Serialization failure, deadlock, concurrent unique insert, lock not available:
the transaction lost a race and a retry may succeed."""
STALE_PLAN = "0A000"
"""feature_not_supported: among others, a prepared statement whose plan DDL made stale
("cached plan must not change result type"), which fails on that connection until it
is closed."""
_UNAVAILABLE_CLASSES = ("08", "28", "53", "57", "3D")
_AUTH_FAILURES = ("authentication failed", "no password supplied", "pg_hba.conf", "password is required")
"""What libpq says of a refused login (a connection error carries no SQLSTATE)."""
_LIBPQ_PREFIX = re.compile(r"^.*\bport \d+ failed:\s*")
"""libpq's ``connection failed: connection to server at "H", port P failed:`` lead."""


def _sqlstate(exc: BaseException) -> str | None:
    orig = getattr(exc, "orig", None) or exc
    state = getattr(orig, "sqlstate", None)
    return state if isinstance(state, str) else None


def _reason(exc: BaseException, secret: str | None, *, primary: bool = False) -> str:
    """The driver's message on one line, the password masked; ``primary``: without the
    server's DETAIL, HINT and CONTEXT lines."""
    orig = getattr(exc, "orig", None) or exc
    diag = getattr(orig, "diag", None)
    message = diag.message_primary if primary and diag is not None and diag.message_primary else str(orig)
    text = " ".join(message.split()) or type(orig).__name__
    if secret:
        text = text.replace(secret, "***")
    return text


def translate(exc: BaseException, where: str, secret: str | None = None) -> KvError:
    """The :class:`KvError` for a driver exception raised while talking to ``where``."""
    import psycopg
    import sqlalchemy.exc as sa_exc

    state = _sqlstate(exc)
    reason = _reason(exc, secret)
    if state in CONFLICT_STATES:
        return ConflictError(f"transaction conflict on {where}, retry it: {reason}")
    if state == "42P01":
        return TableNotFoundError(f"table no longer exists on {where}: {reason}")
    if state == "54000":
        # program_limit_exceeded, e.g. key values within the SPI's limits one by one that
        # together overflow a btree index entry (about 2.7 kB); the DETAIL and HINT are for DBAs
        limit = _reason(exc, secret, primary=True)
        return LimitExceededError(f"value too large for PostgreSQL on {where}: {limit}")
    if state is not None and state.startswith("22"):
        return InvalidFieldError(f"value rejected by {where}: {reason}")
    if _is_auth_failure(state, reason):
        return ProviderUnavailableError(_auth_message(where, reason))
    if state == "57014":
        # query_canceled: a statement_timeout (the URL's or the server's) or an administrator
        return ProviderUnavailableError(f"PostgreSQL at {where} cancelled the statement: {reason}")
    if state is not None and state.startswith(_UNAVAILABLE_CLASSES):
        return ProviderUnavailableError(f"PostgreSQL at {where} is unavailable: {reason}")
    orig = getattr(exc, "orig", None) or exc
    if state is None and isinstance(orig, (psycopg.OperationalError, psycopg.InterfaceError)):
        return ProviderUnavailableError(f"cannot reach PostgreSQL at {where}: {reason}")
    if isinstance(exc, sa_exc.TimeoutError):
        return ProviderUnavailableError(f"no free connection to {where} (pool exhausted): {reason}")
    return KvError(f"PostgreSQL error on {where}: {reason}")


def _is_auth_failure(state: str | None, reason: str) -> bool:
    """Whether the server refused the login (bad user or password, no pg_hba.conf rule)."""
    if state is not None:
        return state.startswith("28")
    lowered = reason.lower()
    return any(words in lowered for words in _AUTH_FAILURES)


def _auth_message(where: str, reason: str) -> str:
    """``authentication failed for user 'U' at PostgreSQL HOST:PORT/DB``, with the
    server's reason (never the password: ``where`` is the masked URL)."""
    from urllib.parse import urlsplit

    try:
        url = urlsplit(where)
        user, host, port, db = url.username, url.hostname, url.port, url.path.lstrip("/")
    except ValueError:
        user = host = None
    if not user or not host:
        return f"authentication failed at PostgreSQL {where}: {reason}"
    server = _LIBPQ_PREFIX.sub("", reason).rsplit("FATAL:", 1)[-1].strip()
    address = f"{host}:{port or 5432}/{db}"
    return f"authentication failed for user {user!r} at PostgreSQL {address}: {server} (check the user and password)"


@contextmanager
def wrapped(where: str, secret: str | None = None, verdict: Callable[[], str | None] | None = None) -> Iterator[None]:
    """Re-raise driver and SQLAlchemy exceptions as :mod:`spi.errors`; ``verdict`` gives
    the reason connections were cut, if they were: it replaces the driver's text of a
    lost connection (an error without SQLSTATE)."""
    import psycopg
    import sqlalchemy.exc as sa_exc

    try:
        yield
    except (sa_exc.SQLAlchemyError, psycopg.Error) as exc:
        error = translate(exc, where, secret)
        lost = (
            verdict is not None
            and isinstance(error, ProviderUnavailableError)
            and _sqlstate(exc) is None
            and not _is_auth_failure(None, _reason(exc, secret))
        )
        reason = verdict() if lost and verdict is not None else None
        raise (ProviderUnavailableError(reason) if reason else error) from None
