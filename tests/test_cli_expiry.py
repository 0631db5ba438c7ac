"""Row expiry on the command line: ``table create/alter --ttl``, ``put --ttl``,
``put --file --ttl``, ``table sweep``, ttl in spec files, and ``copy`` carrying each
row's expiry (CLI.md)."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import pytest
from cli_support import Kvctl, assert_one_error, provider_url, run_process

import spi
from kvctl.durations import describe_seconds, parse_ttl
from kvctl.errors import CliError
from spi.clock import ManualClock


@pytest.fixture(params=["rocksdb", "postgres"])
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh store with table ``s`` (k string key, v long)."""
    cli = Kvctl(provider_url(request.param, tmp_path, request))
    cli.ok("table", "create", "s", "--field", "k:string", "--field", "v:long", "--pk", "k")
    return cli


def test_ttl_words() -> None:
    assert parse_ttl("90") == 90 and parse_ttl("15m") == 900 and parse_ttl("1.5s") == 1.5
    for bad in ("0", "0s", "-1", "soon", ""):
        with pytest.raises(CliError):
            parse_ttl(bad)
    assert [describe_seconds(s) for s in (90, 900, 7200, 86400 * 7, 1.5)] == ["90s", "15m", "2h", "7d", "1.5s"]


def test_create_alter_and_describe_the_ttl(kv: Kvctl, tmp_path: Path) -> None:
    kv.ok("table", "create", "t", "--field", "k:string", "--pk", "k", "--ttl", "2h", "--changes")
    spec = json.loads(kv.ok("table", "describe", "t", "-o", "json").out)
    assert spec["ttl"] == 7200 and spec["changes"] is True
    kv.ok("table", "alter", "t", "--ttl", "15m")
    assert json.loads(kv.ok("table", "describe", "t", "-o", "json").out)["ttl"] == 900
    kv.ok("table", "alter", "t", "--ttl", "none")
    assert "ttl" not in json.loads(kv.ok("table", "describe", "t", "-o", "json").out)
    spec_file = tmp_path / "u.json"
    spec_file.write_text(json.dumps({"fields": [{"name": "k", "type": "string"}], "primary_key": ["k"], "ttl": 60}))
    kv.ok("table", "create", "u", "--spec", str(spec_file))
    assert json.loads(kv.ok("table", "describe", "u", "-o", "json").out)["ttl"] == 60
    assert "ttl: 1m" in kv.ok("table", "describe", "u", "-o", "table").err


def test_bad_ttls_are_one_line_errors_and_write_nothing(kv: Kvctl, tmp_path: Path) -> None:
    for args in (
        ("put", "s", '{"k": "a"}', "--ttl", "0"),
        ("put", "s", '{"k": "a"}', "--ttl", "-5m"),
        ("put", "s", '{"k": "a"}', "--ttl", "soon"),
        ("table", "create", "t", "--field", "k:string", "--pk", "k", "--ttl", "0s"),
        ("table", "alter", "s", "--ttl", "never"),
    ):
        assert_one_error(kv(*args), 2)
    bad_spec = tmp_path / "bad.json"
    bad_spec.write_text(json.dumps({"fields": [{"name": "k", "type": "string"}], "primary_key": ["k"], "ttl": -1}))
    assert_one_error(kv("table", "create", "t", "--spec", str(bad_spec)), 2)
    assert kv.ok("count", "s").out.strip() == "0"
    assert json.loads(kv.ok("table", "list", "-o", "json").out) == [{"name": "s"}]
    assert_one_error(kv("table", "sweep", "missing"), 1)


def test_rows_expire_and_sweep_counts_them(kv: Kvctl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ManualClock()  # the clock of every provider the commands open: moved, not slept out
    monkeypatch.setattr(spi, "connect", functools.partial(spi.connect, clock=clock))
    kv.ok("put", "s", '{"k": "a", "v": 1}', "--ttl", "1s")
    kv.ok("put", "s", '{"k": "b", "v": 2}', "--ttl", "1h")
    kv.ok("put", "s", '{"k": "c", "v": 3}', "--if-absent", "--ttl", "1s")
    rows = tmp_path / "rows.csv"
    rows.write_text("k,v\nd,4\ne,5\n")
    assert kv.ok("put", "s", "--file", str(rows), "--ttl", "1s").out.strip() == "2"
    assert kv.ok("count", "s").out.strip() == "5"
    clock.advance(1.2)
    assert kv.ok("count", "s").out.strip() == "1"
    assert [json.loads(line)["k"] for line in kv.ok("scan", "s", "-o", "ndjson").out.splitlines()] == ["b"]
    assert kv("get", "s", "k=a").code == 1
    assert kv.ok("table", "sweep", "s").out.strip() == "4"
    assert kv.ok("table", "sweep", "s").out.strip() == "0"


def test_copy_carries_each_rows_expiry(tmp_path: Path) -> None:
    src, dst = f"rocksdb://{tmp_path}/src", f"rocksdb://{tmp_path}/dst"
    with spi.connect(src) as p:
        p.admin.create(spi.TableSpec("s", [("k", "string")], ["k"]))
        p.table("s").upsert({"k": "a"}, ttl=3600)
        p.table("s").upsert({"k": "b"})
        want = {r["k"]: (r.version, r.expires_at) for r in p.table("s").scan()}
    Kvctl(src).ok("copy", src, dst, "s")
    with spi.connect(dst) as p:
        assert {r["k"]: (r.version, r.expires_at) for r in p.table("s").scan()} == want
    assert want["a"][1] is not None


@pytest.mark.timing
def test_get_watch_prints_null_when_the_row_expires(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    assert run_process("--url", url, "table", "create", "s", "--field", "k:string", "--pk", "k", "--changes").code == 0
    assert run_process("--url", url, "put", "s", '{"k": "a"}', "--ttl", "1s").code == 0
    started = time.monotonic()
    res = run_process("--url", url, "get", "s", "k=a", "--watch", "--timeout", "1s")
    assert res.code == 0, res
    assert [json.loads(line) for line in res.lines()] == [{"k": "a"}, None]
    assert time.monotonic() - started < 5  # at the expiry, then one quiet second: no sweep waited for


def test_versions_show_the_expiry(kv: Kvctl) -> None:
    kv.ok("put", "s", '{"k": "a", "v": 1}', "--ttl", "1h")
    kv.ok("put", "s", '{"k": "b", "v": 2}')
    got = json.loads(kv.ok("get", "s", "k=a", "--versions", "-o", "json").out)
    assert got["_version"] == 1 and got["_expires_at"].endswith("+00:00")
    assert "_expires_at" not in json.loads(kv.ok("get", "s", "k=b", "--versions", "-o", "json").out)
    # scan shows every row's expiry, on a table without a ttl too (put --ttl gave row a one)
    rows = [json.loads(line) for line in kv.ok("scan", "s", "--versions", "-o", "ndjson").lines()]
    assert [list(r) for r in rows] == [["k", "v", "_version", "_expires_at"]] * 2
    assert rows[0]["_expires_at"] == got["_expires_at"] and rows[1]["_expires_at"] is None
    assert json.loads(kv.ok("scan", "s", "--versions", "-o", "json").out)[1]["_expires_at"] is None
    assert "_expires_at" in kv.ok("scan", "s", "--versions", "-o", "table").out
    lines = kv.ok("scan", "s", "--versions", "--keys-only", "-o", "csv").out.splitlines()
    assert lines[0] == "k,_version,_expires_at" and lines[1] == f"a,1,{got['_expires_at']}" and lines[2] == "b,1,"
    kv.ok("table", "alter", "s", "--ttl", "1d")
    kv.ok("put", "s", '{"k": "c", "v": 3}')
    lines = kv.ok("scan", "s", "--versions", "-o", "csv").out.splitlines()
    assert lines[0] == "k,v,_version,_expires_at" and lines[2] == "b,2,1,"
    assert lines[3].startswith("c,3,1,20") and lines[3].endswith("+00:00")
