"""``kvctl copy --follow``: a copy at one source revision, then the source's events
applied as they commit (a writer process writing meanwhile), a SIGKILLed follower
resumed with ``--mode append``, lag lines, conflicts that outlast the destination's
retries, and the refusals (no feed, compacted)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from cli_support import REPO, Kvctl, assert_one_error, provider_url, until
from copy_support import kvctl_process

import spi
from kvctl import follow
from kvctl.follow import LAG_EVERY
from kvctl.replay import Replayer

THINGS = spi.TableSpec(
    "things",
    [spi.Field("k", "long"), spi.Field("label", "string"), spi.Field("n", "long"), spi.Field("b", "bytes")],
    ["k"],
    indexes=["label"],
    changes=True,
)
COUNTS = spi.TableSpec("counts", [spi.Field("name", "string"), spi.Field("n", "long")], ["name"], changes=True)

APPEND = ["--mode", "append"]
WRITER = textwrap.dedent(
    """
    import random, sys, time
    import spi
    rng = random.Random(7)
    with spi.connect(sys.argv[1]) as p:
        things, counts = p.table("things"), p.table("counts")
        for i in range(int(sys.argv[2])):
            k, op = rng.randrange(60), rng.randrange(5)
            if op == 0:
                things.upsert({"k": k, "label": f"l{i % 7}", "n": i, "b": bytes([i % 256])})
            elif op == 1:
                things.delete((k,))
            elif op == 2:
                counts.increment((f"c{k % 5}",), "n", i)
            elif op == 3:
                things.upsert({"k": k, "label": "ttl", "n": -i, "b": None}, ttl=3600)
            else:
                with p.transaction() as tx:  # one revision touching both tables
                    tx.table("things").update((k,), {"n": i}, default={"label": "tx"})
                    tx.table("counts").increment(("total",), "n", 1)
            print(i, flush=True)
            time.sleep(0.004)
    """
)


def _fill(url: str) -> None:
    with spi.connect(url) as p:
        p.admin.create(THINGS)
        p.admin.create(COUNTS)
        p.table("things").load({"k": k, "label": f"l{k % 7}", "n": k, "b": b"\x00"} for k in range(0, 60, 2))
        p.table("things").upsert({"k": 1, "label": "ttl", "n": 1, "b": None}, ttl=7200)
        p.table("counts").increment(("c0",), "n", 3)


def _state(url: str) -> dict[str, list[tuple[dict[str, Any], int, Any]]]:
    with spi.connect(url) as p:
        return {t: [(r.to_dict(), r.version, r.expires_at) for r in p.table(t).scan()] for t in ("things", "counts")}


def _events(url: str, since: int) -> list[tuple[str, str, Any, int | None, Any]]:
    """The feed after ``since`` as (table, op, key, version, expiry); an expire is a delete."""
    with spi.connect(url) as p:
        return [
            (e.table, "delete" if e.op == "expire" else e.op, e.key, e.version, e.expires_at)
            for e in p.changes(["things", "counts"], since=since)
        ]


def _revision(url: str) -> int:
    with spi.connect(url) as p:
        return p.revision()


def _wait_for_line(stream: Any, pattern: str, proc: subprocess.Popen[str]) -> str:
    """Read ``stream`` until a line matching ``pattern`` (fail if the process ends first)."""
    for line in stream:
        if re.search(pattern, line):
            return str(line)
    raise AssertionError(f"{proc.args!r} ended (exit {proc.wait()}) before printing {pattern!r}")


@pytest.mark.parametrize(
    ("src_kind", "dst_kind"), [("rocksdb", "postgres"), ("postgres", "rocksdb"), ("rocksdb", "rocksdb")]
)
def test_follow_a_writer_kill_and_resume(
    src_kind: str, dst_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    src = provider_url(src_kind, tmp_path / "src", request)
    dst = provider_url(dst_kind, tmp_path / "dst", request)
    _fill(src)
    follower = kvctl_process("copy", src, dst, "things", "counts", "--follow")
    try:
        _wait_for_line(follower.stderr, r"^\d\d:\d\d:\d\d lag: 0 revisions, 0 s$", follower)  # copied and caught up
        start, dst_start = _revision(src), _revision(dst)
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, src, "300"],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        _wait_for_line(writer.stdout, r"^150$", writer)
        os.killpg(follower.pid, signal.SIGKILL)  # mid-way: the writer goes on
        follower.communicate()
        assert writer.stdout is not None
        writer.stdout.read()
        assert writer.wait(120) == 0
    finally:
        if follower.poll() is None:
            os.killpg(follower.pid, signal.SIGKILL)
            follower.communicate()
    resumed = subprocess.run(
        [sys.executable, "-m", "kvctl", "copy", src, dst, "things", "counts", "--follow", "--until-caught-up", *APPEND],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ['{"table":"things","rows":0}', '{"table":"counts","rows":0}']
    assert "copied before; following from revision" in resumed.stderr
    assert re.fullmatch(r"\d\d:\d\d:\d\d lag: 0 revisions, 0 s", resumed.stderr.splitlines()[-1])
    assert _state(dst) == _state(src)  # rows, versions and expiry
    # Every source event after the copy is in the destination's feed once, in order: nothing missed or repeated.
    assert _events(dst, dst_start) == _events(src, start)


def test_lag_lines_while_behind(tmp_path: Path) -> None:
    src, dst = f"rocksdb://{tmp_path / 'src'}", f"rocksdb://{tmp_path / 'dst'}"
    _fill(src)
    kv = Kvctl("memory://")
    kv.ok("copy", src, dst, "--all", "--follow", "--until-caught-up")
    with spi.connect(src) as p:
        counts = p.table("counts")
        for i in range(3000):
            counts.increment((f"c{i % 9}",), "n", 1)
    time.sleep(LAG_EVERY + 0.1)  # the oldest unapplied commit is now more than a second old
    res = kv.ok("copy", src, dst, "--all", "--follow", "--until-caught-up", *APPEND)
    lags = [line[9:] for line in res.err.splitlines() if re.match(r"\d\d:\d\d:\d\d lag: ", line)]  # after the time
    assert lags[-1] == "lag: 0 revisions, 0 s"
    behind = [line for line in lags[:-1] if re.fullmatch(r"lag: \d+ revisions, \d+ s", line)]
    assert behind and int(behind[0].split()[1]) > 0, res.err
    assert _state(dst) == _state(src)


def test_a_conflict_that_outlasts_the_destinations_retries_is_applied_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower runs for days: a revision whose every attempt conflicted (the
    destination's ``run`` gave up) is applied again after a pause, said once on
    stderr, instead of ending the follower (bench/chaos.py saw one exit 1 so on
    PostgreSQL right after a crash); each source revision is still applied once."""
    src, dst = f"rocksdb://{tmp_path / 'src'}", f"rocksdb://{tmp_path / 'dst'}"
    _fill(src)
    kv = Kvctl("memory://")
    kv.ok("copy", src, dst, "--all", "--follow", "--until-caught-up")
    start, dst_start = _revision(src), _revision(dst)
    with spi.connect(src) as p:
        for i in range(5):
            p.table("counts").increment(("c1",), "n", i)
    conflicts = iter(range(6))
    real_apply = Replayer.apply

    def conflicting(self: Replayer, *args: Any, **kwargs: Any) -> bool:
        if next(conflicts, None) is not None:
            raise spi.ConflictError("transaction conflict on the destination, retry it: could not serialize access")
        return real_apply(self, *args, **kwargs)

    monkeypatch.setattr(Replayer, "apply", conflicting)
    monkeypatch.setattr(follow, "CONFLICT_PAUSES", (0.01, 0.04))
    res = kv.ok("copy", src, dst, "--all", "--follow", "--until-caught-up", *APPEND)
    said = [line for line in res.err.splitlines() if "conflict on the destination" in line]
    assert len(said) == 1 and "applying again (every 0.04 s at most)" in said[0], res.err
    assert _state(dst) == _state(src)
    assert _events(dst, dst_start) == _events(src, start)  # nothing missed or applied twice


def test_refusals(tmp_path: Path) -> None:
    src, dst = f"rocksdb://{tmp_path / 'src'}", f"rocksdb://{tmp_path / 'dst'}"
    _fill(src)
    with spi.connect(src) as p:
        p.admin.create(spi.TableSpec("plain", [spi.Field("k", "string")], ["k"]))
    kv = Kvctl("memory://")
    res = kv("copy", src, dst, "things", "plain", "--follow")
    assert_one_error(res, 2)
    assert "kvctl table alter plain --changes" in res.err
    with spi.connect(dst) as q:
        assert q.admin.list_tables() == []  # nothing was copied
    assert_one_error(kv("copy", src, dst, "--all", "--until-caught-up"), 2)
    # A resume point the source compacted away: exit 1, copy again.
    kv.ok("copy", src, dst, "things", "--follow", "--until-caught-up")
    with spi.connect(src) as p:
        p.table("things").upsert({"k": 99, "label": "x", "n": 1, "b": None})
        p.table("things").delete((99,))
        p.compact(p.revision())
    res = kv("copy", src, dst, "things", "--follow", "--until-caught-up", *APPEND)
    assert res.code == 1 and res.err.splitlines()[-1].startswith("error: ")
    assert "copy the tables again" in res.err and "Traceback" not in res.err


CUT_OVER_WRITER = textwrap.dedent(
    """
    import sys, time
    import spi
    with spi.connect(sys.argv[1]) as p:
        things, counts = p.table("things"), p.table("counts")
        i = 0
        try:
            while True:
                things.upsert({"k": i % 40, "label": "w", "n": i, "b": None}, ttl=3600 if i % 3 else None)
                if i % 5 == 0:
                    things.delete(((i + 7) % 40,))
                counts.increment(("writes",), "n", 1)
                i += 1
                print(i, flush=True)
                time.sleep(0.003)
        except spi.FrozenTableError as exc:
            print("frozen:", exc, flush=True)
    """
)


def test_cut_over_freeze_drain_and_compare(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The recipe of docs/cutover.md: follow while a writer writes, freeze the source
    (the writer's next write is refused), wait for lag 0, and the destination equals
    the source in rows, versions and expiry."""
    src = provider_url("rocksdb", tmp_path / "src", request)
    dst = provider_url("postgres", tmp_path / "dst", request)
    _fill(src)
    follower = kvctl_process("copy", src, dst, "things", "counts", "--follow")
    writer = subprocess.Popen(
        [sys.executable, "-c", CUT_OVER_WRITER, src],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        _wait_for_line(follower.stderr, r"^\d\d:\d\d:\d\d lag: 0 revisions, 0 s$", follower)
        _wait_for_line(writer.stdout, r"^100$", writer)  # writing while followed
        for table in ("things", "counts"):
            Kvctl(src).ok("table", "freeze", table)
        assert writer.stdout is not None
        assert "table things is frozen" in _wait_for_line(writer.stdout, r"^frozen:", writer)
        assert writer.wait(60) == 0
        last = _revision(src)
        expected = _state(src)  # frozen: it no longer changes
        assert until(lambda: _state(dst) == expected, 60)  # drained: rows, versions and expiry
        assert _state(src) == expected
        assert _revision(src) == last  # nothing was written after the freeze
    finally:
        if writer.poll() is None:
            writer.kill()
        os.killpg(follower.pid, signal.SIGINT)  # a follower runs until interrupted
        follower.communicate(timeout=60)
        writer.communicate()
    assert follower.returncode == 130
