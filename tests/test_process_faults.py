"""Processes that meet on one store as issue 39's attack made them: one SIGKILLed in
the middle of a transaction (nothing of it is seen, the store is free at once), a
``kvctl put --file`` SIGKILLed part-way (what it committed is whole: rows in input
order, their events, their index entries), and loads of the same keys into one
table at the same time (each exits 0, every row is whole from one input, no write is
lost). Concurrent increments from processes are the conformance kit's
(spi/testing/conformance/processes.py); a RocksDB load killed part-way is
tests/test_rocksdb_processes.py's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_support import REPO, provider_url, until

import spi

ITEMS = spi.TableSpec(
    "t",
    [spi.Field("id", "long"), spi.Field("v", "string"), spi.Field("w", "long")],
    ["id"],
    indexes=["v"],
    changes=True,
)
COUNTER = spi.TableSpec("c", [spi.Field("k", "string"), spi.Field("n", "long")], ["k"])
KINDS = ["rocksdb", "postgres", "etcd"]

IN_TRANSACTION = textwrap.dedent(
    """
    import sys, time, spi
    p = spi.connect(sys.argv[1])
    with p.transaction() as tx:
        for i in range(50):
            tx.table("t").upsert({"id": i, "v": "killed", "w": i})
        tx.table("c").increment(("n",), "n", 1)
        print("written", flush=True)
        time.sleep(60)  # killed here
    """
)


def _store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh, empty store of ``kind`` holding ``ITEMS`` and ``COUNTER``."""
    if kind == "etcd":
        url = str(request.getfixturevalue("etcd_factory")().url)
    else:
        url = provider_url(kind, tmp_path, request)
    with spi.connect(url) as p:
        p.admin.create(ITEMS)
        p.admin.create(COUNTER)
    return url


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("kind", KINDS)
def test_a_process_killed_inside_a_transaction_leaves_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _store(kind, tmp_path, request)
    with spi.connect(url) as p:
        p.table("t").upsert({"id": 0, "v": "before", "w": 0})
        p.table("c").increment(("n",), "n", 1)
        revision = p.revision()
    child = subprocess.Popen(
        [sys.executable, "-c", IN_TRANSACTION, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "written\n", child.communicate()
    finally:
        child.kill()  # SIGKILL, in the transaction
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    with spi.connect(url) as p:
        started = time.monotonic()
        t = p.table("t")
        assert [(r["id"], r["v"]) for r in t.scan()] == [(0, "before")]
        assert p.table("c").read(("n",))["n"] == 1 and p.revision() == revision  # no event either
        assert p.admin.verify("t") == []
        t.upsert({"id": 1, "v": "after", "w": 1})  # the keys it wrote are free
        assert time.monotonic() - started < 5  # no lock of the dead process was waited out
        assert [e.key["id"] for e in p.changes("t", since=revision)] == [1]


@pytest.mark.parametrize("kind", ["postgres", "etcd"])
def test_a_load_killed_part_way_keeps_what_it_committed_whole(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """PostgreSQL commits whole batches; etcd whole pieces of one (each a transaction
    of at most 128 operations): either way a prefix of the input, each row with its
    event and index entries."""
    url = _store(kind, tmp_path, request)
    data = tmp_path / "rows.ndjson"
    data.write_text("".join(json.dumps({"id": i, "v": f"v{i % 7}", "w": i}) + "\n" for i in range(20_000)))
    load = subprocess.Popen(
        [sys.executable, "-m", "kvctl", "--url", url, "put", "t", "--file", str(data), "--batch-size", "500"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    with spi.connect(url) as p:
        t = p.table("t")
        try:
            assert until(lambda: t.count() > 0 or load.poll() is not None, 60)
        finally:
            load.kill()
            _, err = load.communicate()
        assert load.returncode == -signal.SIGKILL, err
        ids = [r["id"] for r in t.scan()]
        assert 0 < len(ids) < 20_000 and ids == list(range(len(ids)))
        if kind == "postgres":
            assert len(ids) % 500 == 0
        assert [e.key["id"] for e in p.changes("t")] == ids
        assert p.admin.verify("t") == []


LOADS = "ab"
"""The overlapping loads: each writes every key, ``v`` its letter."""
KEYS = 400


@pytest.mark.parametrize("kind", KINDS)
def test_overlapping_loads_of_the_same_keys_all_finish_and_lose_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _store(kind, tmp_path, request)
    files = []
    for n, letter in enumerate(LOADS):
        path = tmp_path / f"{letter}.ndjson"
        path.write_text("".join(json.dumps({"id": i, "v": letter, "w": i * 10 + n}) + "\n" for i in range(KEYS)))
        files.append(path)
    loads = [
        subprocess.Popen(
            [sys.executable, "-m", "kvctl", "--url", url, "put", "t", "--file", str(path), "--batch-size", "100"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for path in files
    ]
    for load in loads:
        out, err = load.communicate(timeout=120)
        assert (load.returncode, out, err) == (0, f"{KEYS}\n", "")
    with spi.connect(url) as p:
        rows = list(p.table("t").scan())
        assert [r["id"] for r in rows] == list(range(KEYS))
        # Each row is one input's whole row, and each load's upsert of it counted (its version).
        assert all(r["w"] == r["id"] * 10 + LOADS.index(r["v"]) and r.version == len(LOADS) for r in rows)
        assert p.admin.verify("t") == []
        assert sum(1 for e in p.changes("t")) == KEYS * len(LOADS)  # one event per write
