"""Shared test infrastructure.

``need(what, ok, why)`` (from :mod:`spi.testing.requirements`, re-exported here for
the test modules) skips a test whose real part (PostgreSQL, Spark...) is missing, or
fails it when ``KVCTL_REQUIRE_ALL=1`` (as CI sets): a skipped test in CI would hide a
broken install.
"""

from __future__ import annotations

import pytest

# The etcd test cluster's fixtures (tests/etcd_cluster.py): etcd_cluster, etcd_factory.
from etcd_cluster import etcd_cluster, etcd_factory  # noqa: F401

# PostgreSQL test server fixtures (tests/pg_server.py): pg_server, pg_factory.
from pg_server import pg_factory, pg_server  # noqa: F401

from spi.testing.requirements import need  # noqa: F401


@pytest.fixture(scope="session")
def spark() -> object:
    """One local Spark session for the whole run (tests/spark_session.py)."""
    from spark_session import start

    return start()
