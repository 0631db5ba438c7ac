"""The tools on ``etcd://`` through the SPI: ``kvctl copy`` into etcd and
``copy --follow --until-caught-up`` out of it, and smoke tests of the dashboard (a
table opened, its rows seen) and of ``kvctl export`` through Spark (the session's
3-member cluster)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import REPO, Kvctl
from copy_support import assert_same, fill_real_data, snapshot
from dashboard_support import ORDER_ROWS, cells, dashboard, filled, in_key_order, rows_shown, run_async, status_line
from stream_support import create_target, sink, stream, table_state, write_history

import spi
from spi.testing.fixtures import order_rows

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
    assert_same(src, dst)  # and kvctl diff's checksums agree
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
    assert resumed.stderr.splitlines()[-1].endswith(" lag: 0 revisions, 0 s")  # after the time
    with spi.connect(dst) as q:
        copied = [(r.to_dict(), r.version) for r in q.table("things").scan()]
        assert q.admin.verify("things") == []
    assert copied == [(r.to_dict(), r.version) for r in things.scan()]
    assert p.revision() == start + 30


@run_async
async def test_the_dashboard_opens_a_table_on_etcd(etcd_factory: Callable[..., Any]) -> None:
    p = filled(etcd_factory())
    async with dashboard(p) as (app, _pilot):
        shown = rows_shown(app)
        assert shown and shown == [cells(r) for r in in_key_order(order_rows(ORDER_ROWS))][: len(shown)]
        assert status_line(app).startswith("orders") and f"of {ORDER_ROWS}" in status_line(app)


@pytest.mark.spark
def test_export_from_etcd_through_spark(spark: Any, etcd_factory: Callable[..., Any], tmp_path: Path) -> None:
    p = etcd_factory()
    p.admin.create(THINGS)
    p.table("things").load({"k": k, "label": f"l{k % 5}", "n": k} for k in range(40))
    out = tmp_path / "things.json"
    done = Kvctl(p.url).ok("export", "things", "--out", str(out), "--format", "json", "--partitions", "2")
    assert done.out.strip() == "40"
    exported = [json.loads(line) for f in sorted(out.glob("part-*")) for line in f.read_text().splitlines()]
    assert sorted(r["k"] for r in exported) == list(range(40)) and {r["label"] for r in exported} == {
        "l0",
        "l1",
        "l2",
        "l3",
        "l4",
    }


@pytest.mark.spark
def test_spark_streams_etcds_feed_into_another_etcd_prefix(
    spark: Any, etcd_factory: Callable[..., Any], tmp_path: Path
) -> None:
    """etcd's feed (etcd's own revisions, with gaps between them) as a Spark stream
    in batches of whole revisions, into the kvctl sink on another etcd prefix: the
    two tables end equal, versions included."""
    src, dst = etcd_factory().url, etcd_factory().url
    write_history(src)
    create_target(dst)
    sink(stream(spark, src, startingRevision="earliest", maxRowsPerBatch="20", partitions="2"), dst, tmp_path / "ck")
    assert table_state(dst) == table_state(src)
