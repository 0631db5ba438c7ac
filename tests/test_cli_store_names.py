"""Profiles wherever a store is named (CLI.md "Everyday edges"): ``kvctl copy SRC DST``
takes a URL or a profile of the config file, the profile's ``password_env`` applied;
PostgreSQL takes libpq's ``PGPASSWORD`` and ``~/.pgpass`` (``PGPASSFILE``) when the URL
has no password. Against the throwaway server's password role (tests/pg_server.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from cli_support import Kvctl, assert_one_error
from conftest import need

import spi
from kvctl import config

ROWS = [{"id": i, "name": f"n{i}"} for i in range(25)]


@pytest.fixture
def pg_nopass(pg_server: Any) -> Any:
    """``url(schema)``: the password role's URL on a fresh schema, without its password
    (the schemas are dropped after the test)."""
    need("a password-protected test role", pg_server.password_url is not None, "external server")
    from pg_server import drop_schemas

    parts = urlsplit(pg_server.password_url)
    schemas: list[str] = []

    def url() -> str:
        schemas.append(f"names_{uuid.uuid4().hex[:12]}")
        return f"{parts.scheme}://{parts.username}@{parts.hostname}:{parts.port}{parts.path}?schema={schemas[-1]}"

    yield url
    drop_schemas(pg_server.dsn, schemas)


def _fill_local(folder: Path) -> None:
    """A rocksdb store ``folder/data`` with a table ``people`` of ROWS and an empty ``empty``."""
    with spi.connect(f"rocksdb://{folder / 'data'}") as p:
        p.admin.create(spi.TableSpec("people", [spi.Field("id", "long"), spi.Field("name", "string")], ["id"]))
        p.admin.create(spi.TableSpec("empty", [spi.Field("k", "string")], ["k"]))
        p.table("people").load(ROWS)


def _config(folder: Path, pg_url: str) -> Path:
    path = folder / "kvctl.toml"
    path.write_text(
        f'[profiles.local]\nurl = "rocksdb:./data"\n[profiles.pg]\nurl = "{pg_url}"\npassword_env = "KVCTL_TEST_PW"\n'
    )
    return path


def _people(url: str) -> list[dict[str, Any]]:
    with spi.connect(url, create=False) as p:
        return [dict(r) for r in p.table("people").scan()]


def test_copy_between_two_profiles(tmp_path: Path, pg_nopass: Any) -> None:
    from pg_server import PASSWORD

    url = pg_nopass()
    toml = _config(tmp_path, url)
    _fill_local(tmp_path)
    kvctl = Kvctl("memory://")
    res = kvctl("--config", str(toml), "-o", "json", "copy", "local", "pg", "--all", env={"KVCTL_TEST_PW": PASSWORD})
    assert res.code == 0, res
    assert json.loads(res.out) == [{"table": "empty", "rows": 0}, {"table": "people", "rows": 25}]
    assert PASSWORD not in res.err
    assert _people(config.store_url("pg", "test", config=str(toml), env={"KVCTL_TEST_PW": PASSWORD})) == ROWS
    back = kvctl("--config", str(toml), "copy", "pg", f"rocksdb://{tmp_path / 'back'}", "people",
                 env={"KVCTL_TEST_PW": PASSWORD})  # fmt: skip
    assert back.code == 0, back
    assert _people(f"rocksdb://{tmp_path / 'back'}") == ROWS


def test_unknown_profile_exits_2_listing_the_profiles(tmp_path: Path) -> None:
    toml = _config(tmp_path, "postgresql+psycopg://kv@127.0.0.1:5432/kv")
    _fill_local(tmp_path)
    res = Kvctl("memory://")("--config", str(toml), "copy", "local", "backup", "--all")
    assert_one_error(res, 2)
    assert "profile 'backup' (from argument DST_URL) is not defined (profiles: local, pg)" in res.err, res.err
    assert not (tmp_path / "backup").exists()


def test_profile_without_its_password_variable_exits_2(tmp_path: Path) -> None:
    toml = _config(tmp_path, "postgresql+psycopg://kv@127.0.0.1:5432/kv")
    res = Kvctl("memory://")("--config", str(toml), "copy", "pg", "local", "--all")
    assert_one_error(res, 2)
    assert "environment variable KVCTL_TEST_PW is not set" in res.err, res.err


def test_a_profile_name_needs_a_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KVCTL_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    res = Kvctl("memory://")("copy", "local", "memory://", "--all")
    assert_one_error(res, 2)
    assert "profile 'local' (from argument SRC_URL) needs a config file" in res.err, res.err


def test_postgres_takes_pgpassword_when_the_url_has_none(tmp_path: Path, pg_nopass: Any) -> None:
    from pg_server import PASSWORD

    _fill_local(tmp_path)
    url = pg_nopass()
    res = Kvctl("memory://")("copy", f"rocksdb://{tmp_path / 'data'}", url, "people", env={"PGPASSWORD": PASSWORD})
    assert res.code == 0, res
    refused = Kvctl(pg_nopass())("table", "list", env={"PGPASSWORD": "wrong", "PGPASSFILE": str(tmp_path / "none")})
    assert_one_error(refused, 3)
    assert "authentication failed for user 'kvctl_pw'" in refused.err


def test_postgres_takes_a_pgpass_file_when_the_url_has_none(tmp_path: Path, pg_nopass: Any) -> None:
    from pg_server import PASSWORD

    _fill_local(tmp_path)
    url = pg_nopass()
    parts = urlsplit(url)
    secret = PASSWORD.replace("\\", "\\\\").replace(":", "\\:")
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"{parts.hostname}:{parts.port}:*:{parts.username}:{secret}\n")
    pgpass.chmod(0o600)
    res = Kvctl("memory://")("copy", f"rocksdb://{tmp_path / 'data'}", url, "people", env={"PGPASSFILE": str(pgpass)})
    assert res.code == 0, res
    listed = Kvctl(url)("table", "list", "-o", "json", env={"PGPASSFILE": str(pgpass)})
    assert json.loads(listed.out) == [{"name": "people"}], listed
