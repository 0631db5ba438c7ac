"""Shell completion of commands, table names and column names (bash protocol)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import ORDERS_FIELDS, Kvctl, provider_url
from typer.testing import CliRunner

from kvctl.app import app


def complete(line: str) -> list[str]:
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = {"_KVCTL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)}
    res = CliRunner().invoke(app, [], env=env, prog_name="kvctl")
    assert res.exit_code == 0, res.stderr
    return [w for w in res.stdout.splitlines() if w]


def test_completes_commands_tables_and_columns(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = provider_url("rocksdb", tmp_path, request)
    kv = Kvctl(url)
    kv.ok("table", "create", "orders", *ORDERS_FIELDS)
    kv.ok("table", "create", "other", "--field", "k:string", "--pk", "k")
    assert complete("kvctl ta") == ["table"]
    assert "describe" in complete("kvctl table ")
    assert complete(f"kvctl --url {url} get ") == ["orders", "other"]
    assert complete(f"kvctl --url {url} table describe or") == ["orders"]
    assert complete(f"kvctl --url {url} get orders ") == ["region=", "id="]
    assert complete(f"kvctl --url {url} scan orders --columns st") == ["status"]
    assert complete(f"kvctl --url {url} scan orders --columns status,t") == ["status,total", "status,ts"]
    assert complete(f"kvctl --url {url} incr orders region=eu id=1 --column to") == ["total"]
    # no store, no suggestions, no error
    assert complete("kvctl --url nosuch://x get ") == []
