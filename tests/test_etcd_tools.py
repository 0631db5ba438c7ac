"""The tools on ``etcd://`` through the SPI: ``kvctl copy`` into etcd and
``copy --follow --until-caught-up`` out of it (the session's 3-member cluster)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_support import REPO
from copy_support import fill_real_data, snapshot

import spi

THINGS = spi.TableSpec(
    "things",
    [spi.Field("k", "long"), spi.Field("label", "string"), spi.Field("n", "long")],
    ["k"],
    indexes=["label"],
    changes=True,
)


def _kvctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvctl", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )


def test_copy_rocksdb_into_etcd(etcd_factory: Callable[..., Any], tmp_path: Path) -> None:
    src = f"rocksdb://{tmp_path / 'src'}"
    fill_real_data(src, n=300)
    dst = etcd_factory().url
    done = _kvctl("copy", src, dst, "--all")
    assert done.returncode == 0, done.stderr
    assert snapshot(dst) == snapshot(src)  # specs, rows and versions
    with spi.connect(dst) as p:
        assert p.admin.verify("orders") == [] and p.admin.verify("counters") == []


def test_copy_follow_until_caught_up_out_of_etcd(etcd_factory: Callable[..., Any], tmp_path: Path) -> None:
    p = etcd_factory()
    p.admin.create(THINGS)
    things = p.table("things")
    things.load({"k": k, "label": f"l{k % 5}", "n": k} for k in range(100))
    dst = f"rocksdb://{tmp_path / 'dst'}"
    first = _kvctl("copy", p.url, dst, "things", "--follow", "--until-caught-up")
    assert first.returncode == 0, first.stderr
    start = p.revision()
    for i in range(30):  # events after the copy: updates, deletes, inserts, a transaction
        if i % 3 == 0:
            things.delete((i,))
        elif i % 3 == 1:
            things.upsert({"k": 1000 + i, "label": "new", "n": i})
        else:
            with p.transaction() as tx:
                tx.table("things").update((i,), {"n": -i})
                tx.table("things").increment((1000 + i - 1,), "n", 1)
    resumed = _kvctl("copy", p.url, dst, "things", "--follow", "--until-caught-up", "--mode", "append")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.splitlines()[-1] == "lag: 0 revisions, 0 s"
    with spi.connect(dst) as q:
        copied = [(r.to_dict(), r.version) for r in q.table("things").scan()]
        assert q.admin.verify("things") == []
    assert copied == [(r.to_dict(), r.version) for r in things.scan()]
    assert p.revision() == start + 30
