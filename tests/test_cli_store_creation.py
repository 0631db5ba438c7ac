"""Read-only commands never create a store (CLI.md): a misspelt ``rocksdb:`` path or
PostgreSQL ``?schema=`` is one ``error:`` line naming it (exit 2), and nothing is made.
Write commands create the store; the embedded default store is made by any command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, assert_one_error, provider_url
from typer.testing import CliRunner

from kvctl.app import app


def read_only_commands(tmp_path: Path) -> list[list[str]]:
    """Every read-only command, as a first run against a store would use it."""
    migrations = tmp_path / "migrations"
    migrations.mkdir(exist_ok=True)
    return [
        ["get", "orders", "id=1"],
        ["scan", "orders"],
        ["scan", "orders", "--explain"],
        ["scan", "orders", "--count"],
        ["count", "orders"],
        ["table", "list"],
        ["table", "describe", "orders"],
        ["table", "verify", "orders"],
        ["export", "orders", "--out", str(tmp_path / "out")],
        ["dashboard"],
        ["migrate", str(migrations), "--status"],
    ]


@pytest.mark.parametrize("existing", [False, True], ids=["missing", "empty-folder"])
def test_read_only_commands_on_a_misspelt_rocksdb_path(tmp_path: Path, existing: bool) -> None:
    path = tmp_path / "dta"
    if existing:
        path.mkdir()
    kv = Kvctl(f"rocksdb:{path}")
    for args in read_only_commands(tmp_path):
        res = kv(*args)
        assert_one_error(res, 2)
        what = "is not a RocksDB database" if existing else "does not exist"
        assert f"rocksdb database {path} {what}" in res.err, (args, res)
        assert res.out == ""
        assert path.exists() == existing and (not existing or not any(path.iterdir())), args


def test_a_relative_path_is_named_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = Kvctl("rocksdb:dta")("table", "list")
    assert_one_error(res, 2)
    assert f"rocksdb database {tmp_path / 'dta'} does not exist" in res.err
    assert not (tmp_path / "dta").exists()


def test_write_commands_create_the_store_and_reads_then_work(tmp_path: Path) -> None:
    path = tmp_path / "data"
    kv = Kvctl(f"rocksdb:{path}")
    kv.ok("table", "create", "orders", "--field", "id:long", "--pk", "id")
    assert (path / "CURRENT").is_file()
    assert kv.ok("table", "list").lines() == ['{"name":"orders"}']
    other = Kvctl(f"rocksdb:{tmp_path / 'other'}")
    assert other("put", "orders", '{"id": 1}').code == 1  # the store is created, the table is missing
    assert (tmp_path / "other" / "CURRENT").is_file()


def test_the_embedded_default_store_is_created_by_a_read_only_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("KVCTL_URL", "KVCTL_PROFILE", "KVCTL_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    res = CliRunner().invoke(app, ["table", "list"])
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "share" / "kvctl" / "default" / "CURRENT").is_file()


def test_completion_creates_no_store(tmp_path: Path) -> None:
    path = tmp_path / "dta"
    line = f"kvctl --url rocksdb:{path} get "
    env = {"_KVCTL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": "4"}
    res = CliRunner().invoke(app, [], env=env, prog_name="kvctl")
    assert res.exit_code == 0 and res.stdout.strip() == ""
    assert not path.exists()


def test_read_only_commands_on_a_misspelt_postgres_schema(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = provider_url("postgres", tmp_path, request)  # a schema nobody has created yet
    schema = url.rsplit("schema=", 1)[1]
    kv = Kvctl(url)
    for args in read_only_commands(tmp_path):
        res = kv(*args)
        if args == ["table", "list"]:  # an empty store (CLI.md "Empty stores"): nothing listed, exit 0
            assert res.code == 0 and res.out == "" and "no kvctl tables in" in res.err, res
            continue
        assert_one_error(res, 2)
        assert f"PostgreSQL schema {schema!r}" in res.err and "nothing was created" in res.err, (args, res)
    server: Any = request.getfixturevalue("pg_server")
    assert not _schema_exists(server.dsn, schema)
    kv.ok("table", "create", "orders", "--field", "id:long", "--pk", "id")
    assert _schema_exists(server.dsn, schema)
    assert kv.ok("table", "list").lines() == ['{"name":"orders"}']


def _schema_exists(dsn: str, schema: str) -> bool:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    return bool(row and row[0])
