"""Loads into an empty RocksDB table in chunks the store ingests (spi/kv/chunked_load.py):
the table must be exactly the one a load batch by batch makes (the in-memory engine's),
change events with one revision per chunk; a batch out of key order ends the chunks;
a bad row leaves the batches before it committed; a copy killed part-way leaves whole
chunks, and one terminated says how many rows it wrote, truly."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_support import REPO, until

import spi
from spi.kv import chunked_load, spill, table

SPEC = spi.TableSpec(
    "t",
    [spi.Field("id", "long"), spi.Field("status", "string"), spi.Field("total", "double")],
    ["id"],
    indexes=["status"],
    changes=True,
)
FUTURE = datetime.now(UTC) + timedelta(days=3)
ROWS = [
    spi.Row(
        {"id": i, "status": ["open", "paid", "shipped"][i % 3], "total": float(i % 50)},
        i % 7 + 1,
        None if i % 5 else FUTURE + timedelta(seconds=i),
    )
    for i in range(1000)
]
"""Rows with versions, some expiring: a load that keeps versions (a copy)."""


def _state(p: Any) -> dict[str, Any]:
    """What a reader sees: rows with versions and expiry, an index scan, counts, events
    (revisions aside: they are compared by the caller)."""
    t = p.table("t")
    return {
        "rows": [(dict(r), r.version, r.expires) for r in t.scan()],
        "by_status": [r["id"] for r in t.scan(order_by="status")],
        "paid": t.count(where=spi.col("status") == "paid"),
        "count": t.count(),
        "events": [(c.op, c.key, c.row, c.version, c.prev) for c in p.changes("t", prev=True)],
    }


def _revisions(p: Any) -> list[int]:
    """How many events each revision of the feed holds, in order."""
    counts: dict[int, int] = {}
    for c in p.changes("t"):
        counts[c.revision] = counts.get(c.revision, 0) + 1
    return list(counts.values())


@pytest.fixture
def ingests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Chunks of 300 rows, spilled every 50 writes in blocks of 16; the stretches each
    ingestion (RocksDB's sorted commit) cuts its files at."""
    from providers.rocksdb import provider

    cut: list[int] = []
    commit_sorted = provider._RocksSession.commit_sorted

    def counted(self: Any, range_deletes: Any, writes: Any, cuts: Any = ()) -> None:
        cut.append(len(cuts))
        commit_sorted(self, range_deletes, writes, cuts)

    monkeypatch.setattr(chunked_load, "CHUNK_ROWS", 300)
    monkeypatch.setattr(table, "SPILL_AT", 50)
    monkeypatch.setattr(spill, "BLOCK", 16)
    monkeypatch.setattr(provider._RocksSession, "commit_sorted", counted)
    return cut


def _ingested_files(db: Path) -> list[int]:
    """How many files each ingestion its RocksDB log still holds took."""
    logs = "".join(f.read_text(errors="replace") for f in db.glob("LOG*"))
    return [len(re.findall(r'"file", ', found)) for found in re.findall(r'"files_ingested": \[([^]]*)\]', logs)]


def test_a_chunked_load_makes_the_table_a_load_batch_by_batch_makes(tmp_path: Path, ingests: list[int]) -> None:
    with spi.connect("memory://") as reference, spi.connect(f"rocksdb://{tmp_path / 'db'}") as rocks:
        states, seen = [], []
        for p in (reference, rocks):
            p.admin.create(SPEC)
            progress: list[int] = []
            assert p.table("t").load(ROWS, batch_size=70, keep_versions=True, progress=progress.append) == 1000
            states.append(_state(p))
            seen.append(progress)
        assert states[1] == states[0]
        assert len(states[0]["events"]) == 1000
        assert _revisions(reference) == [70] * 14 + [20]
        assert _revisions(rocks) == [350, 350, 300]  # a chunk takes whole batches: 5 of 70 rows, then the rest
        assert ingests == [4, 4, 4]  # rows, index entries, expiry entries, the counter (and the feed after it)
        assert set(_ingested_files(tmp_path / "db")) == {4}
        assert sorted(set(seen[1])) == [0, 350, 700, 1000]  # committed rows only
        # A second load meets rows: batch by batch, as before.
        more = [spi.Row({"id": 1000 + i, "status": "open", "total": 1.0}, 1) for i in range(100)]
        for p in (reference, rocks):
            p.table("t").load(more, batch_size=70, keep_versions=True)
        assert _state(rocks) == _state(reference)
        assert len(ingests) == 3


def test_a_batch_out_of_key_order_ends_the_chunks(tmp_path: Path, ingests: list[int]) -> None:
    rows = [{"id": i, "status": "open", "total": 1.0} for i in [*range(500, 1000), *range(500)]]
    with spi.connect("memory://") as reference, spi.connect(f"rocksdb://{tmp_path / 'db'}") as rocks:
        for p in (reference, rocks):
            p.admin.create(SPEC)
            assert p.table("t").load(rows, batch_size=100) == 1000
        assert _state(rocks) == _state(reference)
        assert _revisions(rocks) == [300, 200] + [100] * 5  # two chunks, then batch by batch
    assert len(ingests) == 2


def test_a_bad_row_leaves_the_batches_before_it(tmp_path: Path, ingests: list[int]) -> None:
    rows: list[dict[str, Any]] = [{"id": i, "status": "open", "total": 1.0} for i in range(1000)]
    rows[650]["total"] = "much"
    with spi.connect(f"rocksdb://{tmp_path / 'db'}") as p:
        p.admin.create(SPEC)
        progress: list[int] = []
        with pytest.raises(spi.InvalidFieldError) as failed:
            p.table("t").load(rows, batch_size=100, progress=progress.append)
        assert (failed.value.row_index, failed.value.rows_written) == (650, 600)
        assert p.table("t").count() == 600
        assert [r["id"] for r in p.table("t").scan()] == list(range(600))
        assert _revisions(p) == [300, 300]
        assert progress[-1] == 600


def test_a_writer_in_the_key_range_meanwhile_fails_the_chunk(tmp_path: Path, ingests: list[int]) -> None:
    with spi.connect(f"rocksdb://{tmp_path / 'db'}") as p:
        p.admin.create(SPEC)
        t = p.table("t")

        def rows() -> Any:
            for i in range(500):
                if i == 420:
                    t.upsert({"id": 450, "status": "paid", "total": 2.0})  # into the second chunk's range
                yield {"id": i, "status": "open", "total": 1.0}

        with pytest.raises(spi.ConflictError) as failed:
            t.load(rows(), batch_size=100)
        assert failed.value.rows_written == 300
        assert [r["id"] for r in t.scan()] == [*range(300), 450]
        assert t.count() == 301


def _copy(src: str, dst: str) -> subprocess.Popen[str]:
    """``kvctl copy SRC DST t`` in chunks of 20,000 rows."""
    code = (
        "import sys; import spi.kv.chunked_load as c; c.CHUNK_ROWS = 20_000; from kvctl.cli import main; "
        f"sys.argv = ['kvctl', 'copy', {src!r}, {dst!r}, 't', '--batch-size', '1000']; main()"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_copy_stopped_part_way_leaves_whole_chunks(tmp_path: Path, sig: int) -> None:
    src, dst = f"rocksdb://{tmp_path / 'src'}", f"rocksdb://{tmp_path / 'dst'}"
    with spi.connect(src) as p:
        p.admin.create(SPEC)
        p.table("t").load(({"id": i, "status": "open", "total": 1.0} for i in range(300_000)), batch_size=50_000)
    proc = _copy(src, dst)
    db = tmp_path / "dst"
    assert until(lambda: sum(f.stat().st_size for f in db.glob("*.sst")) > 300_000 or proc.poll() is not None, 60)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    with spi.connect(dst) as p:
        ids = [r["id"] for r in p.table("t").scan()]
        assert p.table("t").count() == len(ids)
    assert 0 < len(ids) < 300_000 and len(ids) % 20_000 == 0 and ids == list(range(len(ids)))
    if sig == signal.SIGTERM:
        said = re.search(r"error: terminated; (\d+) rows written", err)
        assert said is not None, err
        assert int(said.group(1)) == len(ids)
