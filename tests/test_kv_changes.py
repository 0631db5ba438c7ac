"""The ordered-store engine's change feed on memory and RocksDB beyond the conformance
kit: the stored layout, retention, long feeds read in chunks, a writer killed in the
middle of a load, the watch wake-up file."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cli_support import flock_held

import spi
from spi.codec import prefix_successor
from spi.kv.feed import PAGE, FeedSettings
from spi.kv.layout import EVENTS, REVISION

ROOT = Path(__file__).resolve().parents[1]
FED = spi.TableSpec(
    "t", [spi.Field("id", "long"), spi.Field("g", "long"), spi.Field("pad", "string")], ["id"], ["g"], changes=True
)
PLAIN = spi.TableSpec("plain", [spi.Field("id", "long"), spi.Field("g", "long")], ["id"], ["g"])


@pytest.fixture(params=["memory", "rocksdb"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return "memory://" if request.param == "memory" else f"rocksdb://{tmp_path}/db"


def _store_keys(p: Any, lo: bytes, hi: bytes | None) -> list[bytes]:
    session = p.session()
    try:
        return [k for k, _ in session.iterate(lo, hi, False)]
    finally:
        session.release()


def test_a_table_without_a_feed_writes_nothing_to_the_feed(url: str) -> None:
    with spi.connect(url) as p:
        p.admin.create(PLAIN)
        p.table("plain").load([{"id": i, "g": i} for i in range(100)])
        p.table("plain").upsert({"id": 1, "g": 2})
        p.table("plain").delete((2,))
        assert _store_keys(p, b"\x02", None) == []  # no event, no revision counter
        assert p.revision() == 0


def test_a_revision_stores_its_events_in_pages_beside_the_counter(url: str) -> None:
    with spi.connect(url) as p:
        p.admin.create(FED)
        p.table("t").load([{"id": i, "g": 0} for i in range(PAGE + 1)], batch_size=PAGE + 1)
        p.table("t").delete((1,))
        keys = _store_keys(p, EVENTS, prefix_successor(EVENTS))
        assert [(int.from_bytes(k[2:10]), int.from_bytes(k[10:14])) for k in keys] == [(1, 0), (1, 1), (2, 0)]
        assert REVISION in _store_keys(p, b"\x02", None)
        assert [e.key["id"] for e in p.changes(limit=PAGE + 2)] == [*range(PAGE + 1), 1]


def test_retention_drops_events_older_than_the_period(url: str) -> None:
    with spi.connect(url + "?changes_retention=1") as p:
        p.admin.create(FED)
        t = p.table("t")
        t.upsert({"id": 1, "g": 1})
        t.upsert({"id": 2, "g": 1})
        time.sleep(1.3)
        t.upsert({"id": 3, "g": 1})  # a retention check is due: revisions 1 and 2 are older than 1 s
        assert [e.revision for e in p.changes(since=2)] == [3]
        with pytest.raises(spi.RevisionCompactedError) as info:
            p.changes()
        assert info.value.oldest == 2


def test_retention_checks_are_rare_and_zero_turns_them_off() -> None:
    every_day = FeedSettings(86400.0)
    assert every_day.retention_due() and not every_day.retention_due()  # then not for a minute
    assert not FeedSettings(0).retention_due()


def test_a_long_feed_is_read_in_chunks_and_a_limit_may_split_a_revision(url: str) -> None:
    with spi.connect(url) as p:
        p.admin.create(FED)
        p.table("t").load(({"id": i, "g": i % 3} for i in range(5000)), batch_size=2500)
        ids = [e.key["id"] for e in p.changes()]
        assert ids == list(range(5000))
        assert [e.key["id"] for e in p.changes(limit=1500)] == list(range(1500))
        assert [e.key["id"] for e in p.changes("t", prefix=(4999,))] == [4999]
        watched = [e.key["id"] for e in p.watch("t", since=0, timeout=0.1)]
        assert watched == list(range(5000))


def test_the_feed_is_kept_after_other_writes_are_compacted_away(url: str) -> None:
    with spi.connect(url) as p:
        p.admin.create(FED)
        for i in range(5):
            p.table("t").upsert({"id": i, "g": 0})
        p.compact(5)
        assert _store_keys(p, EVENTS, prefix_successor(EVENTS)) == []
        assert p.revision() == 5


_LOADER = """
import sys, spi
p = spi.connect(sys.argv[1])
p.admin.create(spi.TableSpec("t", [spi.Field("id", "long"), spi.Field("g", "long"), spi.Field("pad", "string")],
                             ["id"], ["g"], changes=True))
t = p.table("t")
t.upsert({"id": -1, "g": 0, "pad": "first"})
t.delete((-1,))
rows = ({"id": i, "g": i % 97, "pad": "x" * 50} for i in range(10_000_000))
t.load(rows, batch_size=1000, progress=lambda n: print(n, flush=True))
"""


def _events(p: Any) -> Iterator[spi.Change]:
    return p.changes("t")


@pytest.mark.slow
def test_sigkill_during_a_load_into_a_change_fed_table_keeps_rows_and_events_together(tmp_path: Path) -> None:
    """Four loaders, each on a path of its own, killed at random moments (side by side:
    the rounds are independent)."""
    rng = random.Random(4321)
    delays = [rng.uniform(0.0, 0.4) for _ in range(4)]

    def load_and_kill(round_: int) -> None:
        url = f"rocksdb://{tmp_path}/db{round_}"
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_LOADER), url],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        reported = int(proc.stdout.readline())  # at least one batch committed
        time.sleep(delays[round_])  # the point: a kill at a random moment of the load
        proc.send_signal(signal.SIGKILL)
        # The rest through the same reader: readline may have buffered later lines,
        # which communicate() (reading the pipe itself) would never see.
        out = proc.stdout.read()
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, "the loader finished before it was killed"
        reported = max([reported, *(int(x) for x in out.split())])
        with spi.connect(url) as p:
            rows = {r["id"]: (dict(r), r.version) for r in p.table("t").scan()}
            events = list(_events(p))
            n = len(rows)
            assert n % 1000 == 0 and reported <= n
            puts = {e.key["id"]: (e.row, e.version) for e in events if e.op == "put" and e.key["id"] >= 0}
            assert puts == rows  # every committed row has its event, and no event lacks its row
            assert [e.op for e in events[:2]] == ["put", "delete"] and len(events) == n + 2
            assert p.revision() == 2 + n // 1000  # one revision per committed batch
            assert [e.revision for e in events[2::1000]] == list(range(3, 3 + n // 1000))
            assert p.admin.verify("t") == []

    with ThreadPoolExecutor(len(delays)) as pool:
        list(pool.map(load_and_kill, range(len(delays))))


def test_a_rocksdb_commit_announces_its_revision_in_a_file(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        p.admin.create(FED)
        assert not (tmp_path / "db" / "kvctl.rev").exists()
        p.table("t").upsert({"id": 1, "g": 1})
        p.table("t").upsert({"id": 2, "g": 1})
        assert int((tmp_path / "db" / "kvctl.rev").read_bytes()) == 2
        p.admin.create(PLAIN)
        p.table("plain").upsert({"id": 1, "g": 1})
        assert int((tmp_path / "db" / "kvctl.rev").read_bytes()) == 2
        p.admin.drop("t")  # watchers must look: the drop takes a revision
        assert int((tmp_path / "db" / "kvctl.rev").read_bytes()) == 3


_WATCHER = """
import sys, spi
p = spi.connect(sys.argv[1])
waiting = False
for item in p.watch("t", timeout=30, progress=1.0):  # a read a second, as without it
    if isinstance(item, spi.Progress):
        if not waiting:  # a bookmark: the watcher read the feed and waits now
            print("waiting", flush=True)
            waiting = True
    else:
        print("event", flush=True)
"""


def _path_is_free(db: Path) -> bool:
    return not flock_held(db / "kvctl.lock")


@pytest.mark.slow
def test_a_waiting_rocksdb_watcher_does_not_hold_the_path(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        p.admin.create(FED)
    watcher = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_WATCHER), url],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline().strip() == "waiting"  # it read the feed once and waits now
        for _ in range(10):  # the point: free for a while, not only at one moment
            assert _path_is_free(tmp_path / "db")
            time.sleep(0.03)
        with spi.connect(url) as p:
            p.table("t").upsert({"id": 1, "g": 0})
        assert watcher.stdout.readline().strip() == "event"
        # A watcher's read closes the database at once (before the event is handed
        # over), with no 0.25 s linger: the path is free already.
        assert _path_is_free(tmp_path / "db")
    finally:
        watcher.kill()
        watcher.communicate()
