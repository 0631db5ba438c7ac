"""Shared test infrastructure.

``need(what, ok, why)`` skips a test whose real part (PostgreSQL, Spark...) is
missing, or fails it when ``KVCTL_REQUIRE_ALL=1`` (as CI sets): a skipped test in
CI would hide a broken install.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_ALL = os.environ.get("KVCTL_REQUIRE_ALL") == "1"


def need(what: str, ok: bool, why: str = "") -> None:
    """Skip (or, with KVCTL_REQUIRE_ALL=1, fail) unless ``ok``."""
    if ok:
        return
    message = f"{what} is not available" + (f": {why}" if why else "")
    if REQUIRE_ALL:
        pytest.fail(message + " (KVCTL_REQUIRE_ALL=1 turns this skip into a failure)")
    pytest.skip(message)


# PostgreSQL test server fixtures (tests/pg_server.py): pg_server, pg_factory.
from pg_server import pg_factory, pg_server  # noqa: E402, F401


@pytest.fixture(scope="session")
def spark() -> object:
    """One local Spark session for the whole run (tests/spark_session.py)."""
    from spark_session import start

    return start()
