"""Helpers for the CLI tests: run kvctl in-process (CliRunner) or as a real process.

``provider_url(kind, tmp_path, request)`` gives a fresh, empty store per test for
"rocksdb" and "postgres" (skipped, or failed under KVCTL_REQUIRE_ALL=1, when the
provider is not available).
"""

from __future__ import annotations

import fcntl
import importlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import need
from typer.testing import CliRunner

from kvctl.app import app

REPO = Path(__file__).resolve().parent.parent
PROVIDER_KINDS = ["rocksdb", "postgres"]


def _importable(module: str, attr: str) -> tuple[bool, str]:
    try:
        getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        return False, str(exc)
    return True, ""


def provider_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A URL of a fresh, empty store of provider ``kind``."""
    if kind == "rocksdb":
        ok, why = _importable("providers.rocksdb", "RocksDBProvider")
        need("the RocksDB provider", ok, why)
        return f"rocksdb://{tmp_path / 'db'}"
    ok, why = _importable("providers.postgres", "PostgresProvider")
    need("the PostgreSQL provider", ok, why)
    try:
        server = request.getfixturevalue("pg_server")
    except pytest.FixtureLookupError:
        need("the PostgreSQL test server", False, "no pg_server fixture")
    from pg_server import drop_schemas

    schema = f"cli_{uuid.uuid4().hex[:12]}"
    request.addfinalizer(lambda: drop_schemas(server.dsn, [schema]))
    return f"{server.url}{'&' if '?' in server.url else '?'}schema={schema}"


@dataclass
class Result:
    """What a kvctl run produced."""

    code: int
    out: str
    err: str

    @classmethod
    def of(cls, res: Any) -> Result:
        """From a CliRunner result."""
        return cls(res.exit_code, res.stdout, res.stderr)

    def lines(self) -> list[str]:
        """Non-empty stdout lines."""
        return [line for line in self.out.splitlines() if line.strip()]


class Kvctl:
    """Runs ``kvctl --url URL ...`` in-process with typer's CliRunner."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        """Run one command; stdout and stderr are kept apart."""
        res = self.runner.invoke(app, ["--url", self.url, *args], input=input, env=env)
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            raise res.exception
        return Result.of(res)

    def ok(self, *args: str, input: str | None = None) -> Result:
        """Run a command that must succeed."""
        res = self(*args, input=input)
        assert res.code == 0, (args, res)
        return res


def run_process(*args: str, input: str | None = None, env: dict[str, str | None] | None = None, **kw: Any) -> Result:
    """Run ``python -m kvctl ARGS`` as a real process (stdout and stderr are pipes);
    ``env`` adds to this process's environment (None: remove the variable)."""
    merged = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full_env = {k: v for k, v in merged.items() if v is not None}
    proc = subprocess.run(
        [sys.executable, "-m", "kvctl", *args], input=input, capture_output=True, text=True, env=full_env, **kw
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def assert_one_error(res: Result, code: int) -> None:
    """Exit ``code``, exactly one ``error:`` line on stderr, no traceback."""
    assert res.code == code, res
    err_lines = [line for line in res.err.splitlines() if line.strip()]
    assert len(err_lines) == 1 and err_lines[0].startswith("error: "), res
    assert "Traceback" not in res.err


ORDERS_FIELDS = [
    "--field", "region:string", "--field", "id:long", "--field", "status:string",
    "--field", "total:double", "--field", "data:bytes", "--field", "ts:timestamp",
    "--pk", "region,id", "--index", "status",
]  # fmt: skip


def until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Whether ``check()`` holds within ``timeout`` seconds (polled every 0.05 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def flock_held(path: Path) -> bool:
    """True while some process holds a ``flock`` on ``path`` (shared or exclusive):
    tried without waiting, and let go at once (created when missing)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases the lock
    return False
