"""What a provider's calls did, readable by a test (``p.stats()``) and shown by
``kvctl --debug`` / ``KVCTL_LOG`` (issue 27): a fast path that stops being taken, a
retry storm or a failing background sweep shows up here, not only in a benchmark."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import REPO, until

import spi
from spi.stats import NAMES

FIELDS = [spi.Field("k", "string"), spi.Field("n", "long"), spi.Field("tag", "string")]
PLAIN = spi.TableSpec("plain", FIELDS, ["k"])


def _everyday_calls(p: Any) -> None:
    """Reads and single-key writes of existing rows of a plain table, many of each."""
    t = p.table("plain")
    for i in range(50):
        key = f"k{i % 5}"
        t.upsert({"k": key, "tag": str(i)})
        t.increment((key,), "n", 1)
        t.update((key,), {"tag": "u"})
        assert t.read((key,)) is not None


def _warmed(p: Any, spec: spi.TableSpec = PLAIN) -> Any:
    p.admin.create(spec)
    t = p.table("plain")
    for i in range(5):
        t.upsert({"k": f"k{i}", "n": 0})
    t.read(("k0",))
    return t


def test_rocksdb_everyday_calls_take_their_fast_paths(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with spi.connect(f"rocksdb://{tmp_path}/db") as p:
        _warmed(p)
        before = p.stats()
        assert set(before) >= set(NAMES)
        _everyday_calls(p)
        assert p.stats()["fast_path_misses"] == before["fast_path_misses"]
        p.admin.create_or_update(spi.TableSpec("plain", FIELDS, ["k"], indexes=["tag"]))  # a spec change
        with caplog.at_level(logging.DEBUG, logger="spi.kv.autocommit"):
            p.table("plain").read(("k0",))
        assert p.stats()["fast_path_misses"] == before["fast_path_misses"] + 1
        assert [r.getMessage() for r in caplog.records] == [
            "read on 'plain': on a session, as the table's layout is not known yet"
        ]


@pytest.mark.parametrize("changes", [False, True], ids=["plain", "change-fed"])
def test_postgres_everyday_calls_take_their_fast_paths(pg_factory: Callable[..., Any], changes: bool) -> None:
    p = pg_factory()
    _warmed(p, spi.TableSpec("plain", FIELDS, ["k"], changes=changes))
    before, revision = p.stats()["fast_path_misses"], p.revision() if changes else 0
    _everyday_calls(p)
    assert p.stats()["fast_path_misses"] == before
    if changes:  # a revision and its event per write (the events themselves: the conformance suite)
        assert p.revision() == revision + 150
        assert len(list(p.changes("plain", since=revision))) == 150


def test_postgres_conflict_retries_are_counted(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    t = _warmed(p)
    attempts = []

    def bump(tx: Any) -> int:
        row = tx.table("plain").read(("k0",))
        if not attempts:
            t.increment(("k0",), "n", 100)  # another connection commits in between: a conflict
        attempts.append(1)
        return tx.table("plain").upsert({"k": "k0", "n": row["n"] + 1})  # type: ignore[no-any-return]

    p.run(bump)
    assert len(attempts) == 2
    assert p.stats()["conflict_retries"] == 1
    assert t.read(("k0",))["n"] == 101  # type: ignore[index]


def test_rocksdb_lock_waits_are_counted(tmp_path: Path) -> None:
    with spi.connect(f"rocksdb://{tmp_path}/db") as p:
        t = _warmed(p)
        holding, waited = threading.Event(), p.stats()["lock_waits"]

        def hold() -> None:
            with p.transaction() as tx:
                tx.table("plain").read(("k0",))
                holding.set()
                until(lambda: p.stats()["lock_waits"] > waited, 10)  # held until the increment waits

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(10)
        t.increment(("k0",), "n", 1)
        holder.join()
        assert p.stats()["lock_waits"] == waited + 1


def test_background_sweeps_are_counted(tmp_path: Path) -> None:
    with spi.connect(f"rocksdb://{tmp_path}/db?sweep_interval=0.05") as p:
        p.admin.create(PLAIN)
        p.table("plain").upsert({"k": "gone"}, ttl=0.05)
        assert until(lambda: p.stats()["swept_rows"] == 1, timeout=10)
        assert p.stats()["sweeps"] >= 1 and p.stats()["sweep_errors"] == 0


def _kvctl(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvctl", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_kvctl_debug_and_kvctl_log_show_what_the_provider_did(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        _warmed(p)
    shown = _kvctl(["--url", url, "--debug", "get", "plain", "k=k0"])
    assert shown.returncode == 0, shown.stderr
    assert f"providers.rocksdb.handle: rocksdb {tmp_path}/db: opened read-only in" in shown.stderr
    quiet = _kvctl(["--url", url, "get", "plain", "k=k0"])
    assert quiet.returncode == 0 and quiet.stderr == ""
    logged = _kvctl(["--url", url, "get", "plain", "k=k0"], {"KVCTL_LOG": "debug"})
    assert "DEBUG providers.rocksdb.handle" in logged.stderr
    bad = _kvctl(["--url", url, "get", "plain", "k=k0"], {"KVCTL_LOG": "loud"})
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: KVCTL_LOG must be one of debug, info, warning, error, got 'loud'"


def test_dashboard_failures_are_logged_with_their_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """A dashboard worker shows one line and logs the traceback: a user's or the
    store's error at DEBUG, anything else (a bug) at ERROR."""

    from kvctl.tui.session import error_text

    def failing(exc: Exception) -> Exception:
        try:
            raise exc
        except Exception as caught:
            return caught

    with caplog.at_level(logging.DEBUG, logger="kvctl"):
        assert "no such" in error_text(failing(spi.TableNotFoundError("no such table 'x'")))
        text = error_text(failing(ZeroDivisionError("division by zero")))
    assert "ZeroDivisionError" in text
    levels = [(r.levelno, r.exc_info is not None) for r in caplog.records if r.name == "kvctl.tui.session"]
    assert levels == [(logging.DEBUG, True), (logging.ERROR, True)]


def test_debug_logs_go_to_a_file_while_the_dashboard_draws(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With logging on, the dashboard's records go to a file, not over its screen."""

    from kvctl.logs import PACKAGES, away_from_terminal, log_to_stderr

    loggers = [logging.getLogger(name) for name in PACKAGES]
    saved = [(list(lg.handlers), lg.level) for lg in loggers]
    try:
        log_to_stderr("debug")
        with away_from_terminal(tmp_path / "state" / "dashboard.log"):
            logging.getLogger("kvctl.tui.app").debug("drawn")
        logging.getLogger("kvctl.tui.app").debug("after")
    finally:
        for lg, (handlers, level) in zip(loggers, saved, strict=True):
            lg.handlers[:] = handlers
            lg.setLevel(level)
    err = capsys.readouterr().err
    assert "drawn" in (tmp_path / "state" / "dashboard.log").read_text()
    assert "drawn" not in err and "after" in err and "dashboard.log" in err
