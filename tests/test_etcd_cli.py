"""The kvctl command line on ``etcd://`` (the session's cluster, tests/etcd_cluster.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any


def _kvctl(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KVCTL_URL"}
    return subprocess.run(
        [sys.executable, "-m", "kvctl", "--url", url, *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_table_create_put_get_scan(etcd_cluster: Any) -> None:
    prefix = f"cli{uuid.uuid4().hex[:10]}"
    url = f"{etcd_cluster.url}/{prefix}"
    try:
        made = _kvctl(url, "table", "create", "orders", "--field", "region:string", "--field", "id:long",
                      "--field", "status:string", "--pk", "region,id", "--index", "status")  # fmt: skip
        assert made.returncode == 0, made.stderr
        rows = "\n".join(json.dumps({"region": "eu", "id": i, "status": "open" if i % 2 else "done"}) for i in range(5))
        put = subprocess.run(
            [sys.executable, "-m", "kvctl", "--url", url, "put", "orders", "--file", "-", "--format", "ndjson"],
            input=rows, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert put.returncode == 0, put.stderr
        got = _kvctl(url, "get", "orders", "region=eu", "id=3", "-o", "json")
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["status"] == "open"
        scanned = _kvctl(url, "scan", "orders", "--where", "status = 'open'", "-o", "ndjson")
        assert scanned.returncode == 0, scanned.stderr
        assert [json.loads(line)["id"] for line in scanned.stdout.splitlines()] == [1, 3]
        missing = _kvctl(url, "get", "orders", "region=eu", "id=99")
        assert missing.returncode == 1
    finally:
        etcd_cluster.delete_prefix(prefix + "/")


def test_an_unreachable_cluster_exits_3_without_the_password() -> None:
    done = _kvctl("etcd://kv:hunter2@127.0.0.1:1/x?timeout=1", "table", "list")
    assert done.returncode == 3 and "no etcd member reachable" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout
