"""``kvctl txn``: every op and its keys in --help, update's if_version, the cas op
(as ``kvctl cas``; a failed swap fails the whole transaction), and unknown keys
listing the accepted ones (CLI.md's ``txn`` paragraph), on RocksDB and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import PROVIDER_KINDS, Kvctl, Result, assert_one_error, provider_url

KEY = {"region": "eu", "id": 1}


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh store with ``orders`` holding eu/1 (status open, version 1)."""
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok(
        "table", "create", "orders", "--field", "region:string", "--field", "id:long",
        "--field", "status:string", "--field", "total:double", "--pk", "region,id",
    )  # fmt: skip
    runner.ok("put", "orders", json.dumps({**KEY, "status": "open", "total": 1.5}))
    return runner


def run(kv: Kvctl, *ops: dict[str, Any]) -> tuple[Result, Any]:
    """Run a txn of ``ops``: the result and its stdout object (None if none)."""
    res = kv("txn", input=json.dumps({"ops": list(ops)}))
    return res, json.loads(res.out) if res.out.strip() else None


def op(kind: str, **keys: Any) -> dict[str, Any]:
    """An op on ``orders`` (key eu/1 unless given)."""
    base: dict[str, Any] = {"op": kind, "table": "orders"}
    if kind != "put":
        base["key"] = KEY
    return base | keys


def row(kv: Kvctl, id: int = 1) -> dict[str, Any] | None:
    """Row eu/``id`` with its _version, or None."""
    res = kv("get", "orders", "region=eu", f"id={id}", "--versions", "-o", "json")
    return json.loads(res.out) if res.code == 0 else None


def test_help_documents_every_op_and_its_keys() -> None:
    from cli_support import run_process

    text = run_process("txn", "--help", env={"COLUMNS": "100"}).out
    for kind in ("put", "update", "delete", "incr", "cas"):
        assert f" {kind}: " in text, kind
    for key in ("row", "key", "set", "default", "if_version", "if_absent", "column", "by", "expect", "expect_null"):
        assert f'"{key}"' in text, key


def test_update_if_version(kv: Kvctl) -> None:
    res, out = run(kv, op("update", set={"status": "paid"}, if_version=1))
    assert (res.code, out) == (0, {"ok": True, "results": [2]})
    res, out = run(kv, op("put", row={"region": "eu", "id": 2}), op("update", set={"status": "x"}, if_version=1))
    assert_one_error(res, 1)
    assert out["failed_op"] == 1 and "version" in out["reason"], out
    assert row(kv, 2) is None and row(kv)["status"] == "paid"  # type: ignore[index]  # nothing applied


def test_cas_swaps_like_kvctl_cas(kv: Kvctl) -> None:
    res, out = run(
        kv,
        op("cas", column="status", expect="open", set="paid"),
        op("cas", key={"region": "eu", "id": 2}, column="status", expect_null=True, set="new"),
        op("cas", key={"region": "eu", "id": 3}, column="total", expect=None, set=7),
        op("cas", column="total", expect=1.5, set=2),
    )
    assert (res.code, out) == (0, {"ok": True, "results": [True, True, True, True]})
    first = row(kv)
    assert first is not None and first["status"] == "paid" and first["total"] == 2.0 and first["_version"] == 3
    assert row(kv, 2)["status"] == "new" and row(kv, 3)["total"] == 7.0  # type: ignore[index]


@pytest.mark.parametrize(
    ("cas", "reason"),
    [
        (
            {"column": "status", "expect": "paid", "set": "x"},
            "cas did not swap: column 'status' of row region=eu id=1 in 'orders' does not hold paid",
        ),
        (
            {"column": "status", "expect_null": True, "set": "x"},
            "column 'status' of row region=eu id=1 in 'orders' is not null",
        ),
    ],
)
def test_failed_cas_fails_the_transaction(kv: Kvctl, cas: dict[str, Any], reason: str) -> None:
    res, out = run(kv, op("put", row={"region": "eu", "id": 2}), op("incr", column="total"), op("cas", **cas))
    assert_one_error(res, 1)
    assert out["ok"] is False and out["failed_op"] == 2 and reason in out["reason"], out
    assert "op 2 failed, nothing was applied" in res.err
    assert row(kv, 2) is None and row(kv) == {**KEY, "status": "open", "total": 1.5, "_version": 1}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            op("update", set={"status": "x"}, if_versoin=1),
            "op 1 (update): unknown key(s) if_versoin (accepted keys: table, key, set, default, if_version)",
        ),
        (
            op("cas", column="status", expected="open", set="x"),
            "op 1 (cas): unknown key(s) expected (accepted keys: table, key, column, set, expect, expect_null)",
        ),
        (
            op("cas", column="status", expect="open"),
            "op 1 (cas): missing set (accepted keys: table, key, column, set, expect, expect_null)",
        ),
        (op("cas", column="status", set="x"), 'give exactly one of "expect": VALUE or "expect_null": true'),
        (
            op("cas", column="status", expect="a", expect_null=True, set="x"),
            'give exactly one of "expect": VALUE or "expect_null": true',
        ),
        (op("cas", column="status", expect_null=False, set="x"), 'give exactly one of "expect"'),
        (op("cas", column="id", expect=1, set=2), "cas needs a non-key column; 'id' is a key column"),
        (op("cas", column="total", expect=1.5, set="lots"), "op 1: set"),
        (op("cas", column="nope", expect=1, set=2), "op 1: table 'orders' has no column 'nope'"),
        (op("cas", column=["total"], expect=1, set=2), '"column" must be a string'),
        (op("incr", column="total", by="2"), "by must be a number"),
    ],
)
def test_bad_ops_exit_2_naming_the_accepted_keys(kv: Kvctl, bad: dict[str, Any], message: str) -> None:
    res, _ = run(kv, op("put", row={"region": "eu", "id": 9}), bad)
    assert_one_error(res, 2)
    assert message in res.err, res.err
    assert row(kv, 9) is None
