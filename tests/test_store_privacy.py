"""Stores are created private (issue 39): a new RocksDB store's folder is 0700 and the
files made with it 0600, the embedded default store's folders 0700; an etcd key
prefix with a ``.``/``..`` or empty part is refused."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Kvctl, assert_one_error
from typer.testing import CliRunner

import spi
from kvctl.app import app


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The usual umask 022, whatever the test runner's: files would be 0644 without kvctl's care."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("open_umask")
def test_a_new_rocksdb_store_is_private(tmp_path: Path) -> None:
    store = tmp_path / "data" / "store"
    Kvctl(f"rocksdb://{store}").ok("table", "create", "t", "--field", "id:long", "--pk", "id")
    assert _mode(store) == 0o700
    made = {p.name: _mode(p) for p in store.iterdir()}
    for name in ("kvctl.lock", "kvctl.wait", "CURRENT", "IDENTITY", "LOCK", "LOG"):
        assert made[name] == 0o600, (name, oct(made[name]))
    assert any(name.startswith("MANIFEST-") and mode == 0o600 for name, mode in made.items()), made
    # RocksDB's later files follow the umask, behind the owner-only folder
    assert all(mode & 0o022 == 0 for mode in made.values()), made


@pytest.mark.usefixtures("open_umask")
def test_an_existing_empty_folder_keeps_its_mode(tmp_path: Path) -> None:
    store = tmp_path / "shared"
    store.mkdir(mode=0o750)
    Kvctl(f"rocksdb://{store}").ok("table", "create", "t", "--field", "id:long", "--pk", "id")
    assert _mode(store) == 0o750
    assert _mode(store / "CURRENT") == 0o600


@pytest.mark.usefixtures("open_umask")
def test_the_default_store_folders_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("KVCTL_URL", "KVCTL_PROFILE", "KVCTL_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg" / "share"))
    res = CliRunner().invoke(app, ["table", "list"])
    assert res.exit_code == 0, res.stderr
    for folder in ("xdg", "xdg/share", "xdg/share/kvctl", "xdg/share/kvctl/default"):
        assert _mode(tmp_path / folder) == 0o700, folder


@pytest.mark.parametrize("prefix", ["../../", "..", "a/../b", "./a", "a/.", "/a", "a//b", "a//", "%2e%2e/x"])
def test_an_etcd_prefix_with_a_dot_or_empty_part_is_refused(prefix: str) -> None:
    url = f"etcd://127.0.0.1:2379/{prefix}"
    with pytest.raises(spi.UrlError, match=r"etcd key prefix .* part"):
        spi.connect(url)
    res = Kvctl(url)("table", "list")
    assert_one_error(res, 2)
    assert "etcd key prefix" in res.err


@pytest.mark.parametrize("prefix", ["", "/", "team/app", "team/app/", "a..b", "v1.2/x_y~z-w"])
def test_ordinary_etcd_prefixes_are_taken(prefix: str) -> None:
    from providers.etcd.url import parse_url

    parsed = parse_url(f"etcd://127.0.0.1:2379/{prefix}")
    assert parsed.prefix == (prefix.rstrip("/") or "kvctl")
