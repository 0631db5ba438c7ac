"""Range updates and deletes that spill to disk (spi/kv/spill.py): on RocksDB an
auto-commit range write moves its buffered writes and events to temp files every
``SPILL_AT`` writes and commits them as one ingested SST file; the answers, index
entries, row counts and change events must be exactly those of the in-memory engine,
and a failure part-way must leave the table as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import spi
from spi.kv import spill, table

SPEC = spi.TableSpec(
    "t",
    [spi.Field("id", "long"), spi.Field("status", "string"), spi.Field("total", "double")],
    ["id"],
    indexes=["status"],
    changes=True,
)
ROWS = [{"id": i, "status": ["open", "paid", "shipped"][i % 3], "total": float(i % 50)} for i in range(2500)]
"""Three chunks of a range write (1,000 rows each): writes and events on both sides of a spill."""


def _state(p: Any) -> dict[str, Any]:
    """What a reader sees: rows, an index scan, counts and the feed's events."""
    t = p.table("t")
    return {
        "rows": [(dict(r), r.version) for r in t.scan()],
        "by_status": [r["id"] for r in t.scan(order_by="status")],
        "paid": t.count(where=spi.col("status") == "paid"),
        "count": t.count(),
        "revision": p.revision(),
        "events": [(c.revision, c.op, c.key, c.row, c.version, c.created, c.prev) for c in p.changes("t", prev=True)],
    }


def _run(p: Any) -> list[int]:
    """Load, then range writes (filtered, ranged, every row of a change-fed table); the rows each changed."""
    t = p.table("t")
    t.load(ROWS)
    return [
        t.update_range(where=spi.col("total") < 30, changes={"status": "paid"}),
        t.delete_range(spi.Range((100,), (500,)), where=spi.col("status") == "paid"),
        t.delete_range(),  # a change-fed table: row by row, spilled too
    ]


@pytest.fixture
def spills(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Spill every 50 writes; the sizes of the runs spilled."""
    sizes: list[int] = []
    add_run = spill.SpilledWrites.add_run

    def counted(self: spill.SpilledWrites, keys: list[bytes], values: list[bytes | None]) -> None:
        sizes.append(len(keys))
        add_run(self, keys, values)

    monkeypatch.setattr(table, "SPILL_AT", 50)
    monkeypatch.setattr(spill, "BLOCK", 16)  # several blocks a run
    monkeypatch.setattr(spill.SpilledWrites, "add_run", counted)
    return sizes


def test_spilled_range_writes_answer_as_the_in_memory_engine(tmp_path: Path, spills: list[int]) -> None:
    with spi.connect("memory://") as reference, spi.connect(f"rocksdb://{tmp_path / 'db'}") as rocks:
        states = []
        for p in (reference, rocks):
            p.admin.create(SPEC)
            states.append({"changed": _run(p), **_state(p)})
        assert spills and max(spills) >= 50  # RocksDB spilled; memory:// never does
        assert states[1] == states[0]
        assert states[0]["changed"] == [1500, 294, 2206]
        assert states[0]["revision"] == 4  # the load, then one revision per range write


def test_a_failure_part_way_leaves_the_table_as_it_was(tmp_path: Path, spills: list[int]) -> None:
    rows = [{"id": i, "status": "open", "total": 1.0} for i in range(2500)]  # three chunks: two spills
    with spi.connect(f"rocksdb://{tmp_path / 'db'}") as p:
        p.admin.create(SPEC)
        p.table("t").load(rows)
        before = _state(p)
        add_run = spill.SpilledWrites.add_run
        calls: list[int] = []

        def fail_second(self: spill.SpilledWrites, keys: list[bytes], values: list[bytes | None]) -> None:
            calls.append(len(keys))
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
            add_run(self, keys, values)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(spill.SpilledWrites, "add_run", fail_second)
            with pytest.raises(OSError, match="No space left"):
                p.table("t").update_range(changes={"status": "paid"})
        assert _state(p) == before
        assert p.table("t").update_range(changes={"status": "paid"}) == 2500  # the store is usable after it
        assert p.table("t").count(where=spi.col("status") == "paid") == 2500
    assert len(spills) >= 2
    assert not [f for f in (tmp_path / "db").iterdir() if f.name.startswith("kvctl-ingest-")]


def test_merged_blocks_keep_the_last_streams_write_of_a_key() -> None:
    """:func:`spill.merge_blocks` against a dict: random streams of random blocks, keys
    shared between streams, long stretches of one stream, empty blocks."""
    import random
    from itertools import pairwise

    rng = random.Random(7)
    for _ in range(200):
        streams, expected = [], {}
        for s in range(rng.randint(0, 5)):
            keys = sorted({bytes([rng.randint(0, 40), rng.randint(0, 3)]) for _ in range(rng.randint(0, 60))})
            values = [None if rng.random() < 0.2 else b"%d" % s for _ in keys]
            expected.update(zip(keys, values))
            cuts = sorted(rng.sample(range(len(keys) + 1), min(3, len(keys) + 1)))
            bounds = [0, *cuts, len(keys)]
            streams.append([(keys[a:b], values[a:b]) for a, b in pairwise(bounds)])
        merged = [(k, v) for keys, values in spill.merge_blocks(*streams) for k, v in zip(keys, values)]
        assert merged == sorted(expected.items())
