"""etcd at its default limits (128 operations per transaction, 1.5 MiB per request),
as managed and Kubernetes clusters run it: every bulk path cuts its work into pieces
one etcd transaction holds (issue 34), and one transaction that cannot fit fails whole
naming the limit and the server flag. The session's cluster runs at the defaults; one
test here starts a member with a raised ``--max-txn-ops``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import REPO
from conftest import need
from etcd_cluster import ThrowawayEtcd
from stream_support import SPEC, create_target, sink, stream, table_state

import spi
from providers.etcd.provider import load_piece
from spi.errors import LimitExceededError, TransactionTooLargeError

ITEMS = spi.TableSpec(
    "items",
    [spi.Field("k", "long"), spi.Field("label", "string"), spi.Field("n", "long"), spi.Field("blob", "string")],
    ["k"],
    indexes=["label", "n"],
    changes=True,
    ttl=86_400,
)
"""Two indexes, an expiry and a change feed: four etcd keys per new row, more per
rewritten one (old index and expiry entries deleted)."""


def _kvctl(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvctl", *args],
        capture_output=True,
        text=True,
        input=input,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )


def _rows(n: int, label: str = "a", size: int = 10) -> list[dict[str, Any]]:
    return [{"k": k, "label": f"{label}{k % 7}", "n": k, "blob": "x" * size} for k in range(n)]


def test_a_load_of_big_rows_is_cut_to_the_request_bytes(etcd_factory: Callable[..., Any]) -> None:
    """Rows of 80 KB: a piece sized by operations alone (28 rows) is over 1.5 MiB for
    one request in the first batch, so the load halves it and goes on."""
    p = etcd_factory()
    p.admin.create(ITEMS)
    seen: list[int] = []
    assert p.table("items").load(_rows(120, size=80_000), progress=seen.append) == 120
    assert p.table("items").count() == 120 and p.admin.verify("items") == []
    assert seen[-1] == 120 and seen == sorted(seen) and seen[0] < load_piece(128, 2, True)
    assert len(list(p.changes("items"))) == 120


def test_rewriting_indexed_rows_is_cut_where_the_estimate_is_short(etcd_factory: Callable[..., Any]) -> None:
    """A piece is sized for new rows; rewriting rows deletes their old index and expiry
    entries too, twice the operations, and the pieces are cut again."""
    p = etcd_factory()
    p.admin.create(ITEMS)
    t = p.table("items")
    t.load(_rows(500))
    assert t.load(_rows(500, label="b")) == 500
    assert t.count(where=spi.col("label") == "b3") == len([k for k in range(500) if k % 7 == 3])
    assert p.admin.verify("items") == [] and {r.version for r in t.scan()} == {2}


def test_a_url_claiming_more_than_the_server_takes_is_cut_by_the_servers_answer(
    etcd_factory: Callable[..., Any],
) -> None:
    """``?max_txn_ops=1024`` against members at the default 128: the server refuses the
    first piece (nothing written), and the load cuts it until it fits."""
    p = etcd_factory(max_txn_ops="1024")
    p.admin.create(ITEMS)
    assert p.table("items").load(_rows(400)) == 400
    assert p.table("items").count() == 400 and p.admin.verify("items") == []


def test_one_transaction_that_cannot_fit_fails_whole_naming_the_limit(etcd_factory: Callable[..., Any]) -> None:
    p = etcd_factory()
    p.admin.create(ITEMS)
    with pytest.raises(TransactionTooLargeError) as caught, p.transaction() as tx:
        for row in _rows(60):
            tx.table("items").upsert(row)
    assert isinstance(caught.value, LimitExceededError)
    assert "max_txn_ops" in str(caught.value) and "--max-txn-ops" in str(caught.value)
    assert p.table("items").count() == 0 and p.revision() == 0


def test_put_file_copy_and_apply_into_a_stock_cluster(etcd_factory: Callable[..., Any], tmp_path: Path) -> None:
    """The CLI's bulk paths at etcd's defaults: ``put --file`` with the default 10,000-row
    batches, ``copy`` of a table with indexes, ttl and a feed, and ``apply`` of a
    source revision of 600 events (one RocksDB load batch) — applied in pieces, its
    position recorded with the last, so a rerun applies nothing."""
    src = f"rocksdb://{tmp_path / 'src'}"
    data = tmp_path / "items.ndjson"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(600, size=100)))
    with spi.connect(src) as p:
        p.admin.create(ITEMS)
    loaded = _kvctl("--url", src, "put", "items", "--file", str(data))
    assert (loaded.returncode, loaded.stdout.strip()) == (0, "600"), loaded.stderr

    dst = etcd_factory()
    copied = _kvctl("copy", src, dst.url, "--all")
    assert copied.returncode == 0, copied.stderr
    assert dst.table("items").count() == 600 and dst.admin.verify("items") == []
    assert [(r.to_dict(), r.version) for r in dst.table("items").scan()] == table_state(src, "items")

    into = etcd_factory()
    into.admin.create(spi.TableSpec("items", ITEMS.fields, ITEMS.primary_key, indexes=ITEMS.indexes))
    events = _kvctl("--url", src, "changes", "items").stdout
    assert len(events.splitlines()) == 600
    applied = _kvctl("--url", into.url, "apply", "items", "--file", "-", input=events)
    assert (applied.returncode, applied.stdout.strip()) == (0, "1"), applied.stderr
    assert into.table("items").count() == 600 and into.admin.verify("items") == []
    again = _kvctl("--url", into.url, "apply", "items", "--file", "-", input=events)
    assert (again.returncode, again.stdout.strip()) == (0, "0"), again.stderr


def test_the_spark_sink_cuts_a_micro_batch_to_fit(spark: Any, etcd_factory: Callable[..., Any], tmp_path: Path) -> None:
    """One micro-batch of 600 events in one task: its 10,000-row transaction does not
    fit, so the sink writes it in pieces, each recording its last row's position."""
    src = f"rocksdb://{tmp_path / 'src'}"
    with spi.connect(src) as p:
        p.admin.create(SPEC)
        p.table(SPEC.name).load({"region": "eu", "id": i, "total": i / 4, "note": "n" * 50} for i in range(600))
    dst = etcd_factory().url
    create_target(dst)
    sink(stream(spark, src, startingRevision="earliest", partitions="1"), dst, tmp_path / "ck")
    assert table_state(dst) == table_state(src)


def test_a_cluster_with_raised_limits_takes_bigger_pieces(tmp_path: Path) -> None:
    """A member started with ``--max-txn-ops=1024`` and a URL that says so: pieces of
    (1024 - 32) // 4 rows, so fewer transactions."""
    binary = shutil.which("etcd")
    need("etcd", binary is not None, "no etcd binary found (run scripts/ensure-etcd.sh)")
    assert binary is not None
    member = ThrowawayEtcd(binary, members=1, extra=("--max-txn-ops=1024",)).start()
    try:
        with spi.connect(f"{member.url}/raised?max_txn_ops=1024") as p:
            p.admin.create(ITEMS)
            seen: list[int] = []
            assert p.table("items").load(_rows(1000), progress=seen.append) == 1000
            assert seen[0] == load_piece(1024, 2, True) == 248
            assert p.admin.verify("items") == []
    finally:
        member.stop()


def test_adding_an_index_to_a_big_table_builds_it_in_pieces(etcd_factory: Callable[..., Any]) -> None:
    """An index added to 500 rows (500 entries, over one transaction): built in pieces
    while the index is unused by reads, then in the spec; a migration does the same."""
    p = etcd_factory()
    plain = spi.TableSpec("items", ITEMS.fields, ITEMS.primary_key, changes=True)
    p.admin.create(plain)
    t = p.table("items")
    t.load(_rows(500))
    before = p.revision()
    done = _kvctl("--url", p.url, "table", "alter", "items", "--add-index", "label")
    assert done.returncode == 0, done.stderr
    assert p.admin.get_spec("items").indexes == ("label",) and p.admin.verify("items") == []
    assert t.count(where=spi.col("label") == "a3") == len([k for k in range(500) if k % 7 == 3])
    assert list(p.changes("items", since=before)) == []  # no row changed: no event
    from migrations import migrate
    from migrations.model import Migration, Step

    spec = p.admin.get_spec("items")
    indexed = spi.TableSpec("items", spec.fields, spec.primary_key, ["label", "n"], changes=True)
    assert migrate(p, [Migration(1, "index n", "x", (Step("create_or_update", spec=indexed),), "test")]) == [1]
    assert p.admin.get_spec("items").indexes == ("label", "n") and p.admin.verify("items") == []


def test_a_stopped_index_build_is_kept_up_and_finished_by_the_same_change(etcd_factory: Callable[..., Any]) -> None:
    """Stopped after its first commit (the index building): writes keep its entries, reads
    do not use it, and adding the index again builds and finishes it."""
    from spi.kv import index_build
    from spi.spec import plan_schema_change

    p = etcd_factory()
    plain = spi.TableSpec("items", ITEMS.fields, ITEMS.primary_key)
    p.admin.create(plain)
    t = p.table("items")
    t.load(_rows(300))
    wanted = spi.TableSpec("items", ITEMS.fields, ITEMS.primary_key, indexes=["label"])
    with p.transaction() as tx:  # the build's first commit, by hand
        index_build.start_build(tx, tx.layout("items"), wanted, plan_schema_change(plain, wanted))
    t.upsert({"k": 7, "label": "moved", "n": 7, "blob": ""})
    t.delete((8,))
    assert p.admin.get_spec("items").indexes == ()
    assert [r["k"] for r in t.scan(where=spi.col("label") == "moved")] == [7]
    p.admin.create_or_update(wanted)
    assert p.admin.get_spec("items").indexes == ("label",) and p.admin.verify("items") == []
    assert [r["k"] for r in t.scan(where=spi.col("label") == "moved")] == [7]
    assert t.count(where=spi.col("label") == "a0") == len([k for k in range(300) if k % 7 == 0 and k != 7])
