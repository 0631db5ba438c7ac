"""``kvctl table list`` on a store with no kvctl tables (CLI.md "Empty stores"): nothing
on stdout (``-o json``: ``[]``), exit 0, a stderr note naming where it looked, and
nothing created; only a ``rocksdb:`` path that does not exist exits 2."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, assert_one_error

import spi


def _assert_empty_listing(url: str, where: str) -> None:
    kvctl = Kvctl(url)
    for fmt in ("table", "ndjson", "csv"):
        res = kvctl("table", "list", "-o", fmt)
        assert res.code == 0 and res.out == "", (fmt, res)
        assert res.err == f"no kvctl tables in {where}\n", res.err
    res = kvctl("table", "list", "--counts", "-o", "json")
    assert res.code == 0 and json.loads(res.out) == [], res
    assert "no kvctl tables in" in res.err


def test_postgres_fresh_schema_lists_nothing_and_creates_nothing(pg_server: Any) -> None:
    from pg_server import drop_schemas

    schema = f"empty_{uuid.uuid4().hex[:12]}"
    url = f"{pg_server.url}{'&' if '?' in pg_server.url else '?'}schema={schema}"
    try:
        _assert_empty_listing(url, spi.mask_password(url))
        missing = Kvctl(url)("scan", "orders")  # other read-only commands still refuse a schema without tables
        assert_one_error(missing, 2)
        assert f"schema {schema!r}" in missing.err and "holds no kvctl tables" in missing.err
    finally:
        drop_schemas(pg_server.dsn, [schema])
    import psycopg

    with psycopg.connect(pg_server.dsn) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    assert found is None


def test_postgres_password_role_fresh_schema(pg_server: Any) -> None:
    """The note never shows the password."""
    if pg_server.password_url is None:
        pytest.skip("external server: no password role")
    from pg_server import PASSWORD, drop_schemas

    schema = f"empty_{uuid.uuid4().hex[:12]}"
    url = f"{pg_server.password_url}?schema={schema}"
    try:
        res = Kvctl(url)("table", "list")
        assert res.code == 0 and res.out == "", res
        assert "***" in res.err and PASSWORD not in res.err, res.err
    finally:
        drop_schemas(pg_server.dsn, [schema])


def test_etcd_empty_prefix_lists_nothing(etcd_cluster: Any) -> None:
    url = f"{etcd_cluster.url}/empty{uuid.uuid4().hex[:12]}"
    _assert_empty_listing(url, url)


def test_rocksdb_empty_store_lists_nothing(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(url) as p:
        p.admin.list_tables()  # the first transaction makes the database
    _assert_empty_listing(url, url)


def test_rocksdb_missing_path_exits_2(tmp_path: Path) -> None:
    res = Kvctl(f"rocksdb://{tmp_path / 'nothing'}")("table", "list")
    assert_one_error(res, 2)
    assert f"rocksdb database {tmp_path / 'nothing'} does not exist" in res.err
    assert not (tmp_path / "nothing").exists()
