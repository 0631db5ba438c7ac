"""``kvctl watch``, ``changes``, ``changes compact``, ``revision``, ``get --watch`` and
``table create/alter --changes`` as real processes (CLI.md): event lines (compact,
``created``, ``--prev``, ``--ops``), ``watch --count/--progress/--initial``."""

from __future__ import annotations

import json
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
from cli_support import REPO, Result, assert_one_error, provider_url, run_process

from kvctl.durations import parse_duration
from kvctl.errors import CliError


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A RocksDB store with a change-fed table ``o`` and a plain table ``plain``."""
    url = f"rocksdb://{tmp_path}/db"
    assert run_process("--url", url, "table", "create", "o", "--field", "id:long", "--field", "s:string",
                       "--field", "b:bytes", "--pk", "id", "--changes").code == 0  # fmt: skip
    assert run_process("--url", url, "table", "create", "plain", "--field", "id:long", "--pk", "id").code == 0
    return url


def kv(url: str, *args: str, input: str | None = None) -> Result:
    """Run ``kvctl --url URL ARGS`` as a process."""
    return run_process("--url", url, *args, input=input)


def events(res: Result) -> list[dict[str, Any]]:
    """The NDJSON events a command printed."""
    return [json.loads(line) for line in res.lines()]


def spawn(url: str, *args: str) -> subprocess.Popen[str]:
    """Start ``kvctl --url URL ARGS`` in the background."""
    return subprocess.Popen(
        [sys.executable, "-m", "kvctl", "--url", url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def ready(proc: subprocess.Popen[str]) -> int:
    """Wait for a watch's readiness line on stderr, ``watching T from revision R``; R."""
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.fullmatch(r"watching \S+ from revision (\d+)\n", line)
    assert match is not None, (line, proc.communicate(timeout=30) if not line else "")
    return int(match.group(1))


def compact(value: Any) -> str:
    """``value`` as the compact JSON line the feed commands print."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_durations() -> None:
    assert [parse_duration(t, "--timeout") for t in ["90", "90s", "15m", "2h", "7d", "0.5s", " 1M "]] == [
        90, 90, 900, 7200, 604800, 0.5, 60
    ]  # fmt: skip
    for bad in ["", "x", "-1", "1w", "1.5.2s", "s", "inf"]:
        with pytest.raises(CliError, match="expects a duration"):
            parse_duration(bad, "--timeout")


def test_revision_changes_and_their_shape(url: str) -> None:
    assert kv(url, "revision").out == "0\n"
    kv(url, "put", "o", '{"id": 1, "s": "a", "b": "AAE="}')
    kv(url, "put", "plain", '{"id": 1}')
    kv(url, "delete", "o", "id=1")
    assert kv(url, "revision").out == "2\n"
    res = kv(url, "changes", "o")
    assert res.code == 0 and res.err == ""
    put, delete = events(res)
    assert put["revision"] == 1 and put["table"] == "o" and put["op"] == "put" and put["version"] == 1
    assert put["key"] == {"id": 1} and put["row"] == {"id": 1, "s": "a", "b": "AAE="}  # JSON value rules
    assert put["time"].endswith("+00:00") and put["created"] is True and put["expires"] is None
    assert "prev" not in put and "initial" not in put  # only with --prev / watch --initial
    assert {k: delete[k] for k in ("revision", "op", "key", "row", "version", "created")} == {
        "revision": 2, "op": "delete", "key": {"id": 1}, "row": None, "version": None, "created": None
    }  # fmt: skip
    assert res.lines() == [compact(put), compact(delete)]  # compact lines: no spaces
    assert events(kv(url, "changes")) == [put, delete]  # every change-fed table
    assert events(kv(url, "changes", "o", "--since", "1")) == [delete]
    same = kv(url, "changes", "o", "-o", "json")  # -o json prints the same lines (they pipe into apply)
    assert same.out == res.out


def test_changes_pages_end_at_a_revision_and_say_how_to_continue(url: str) -> None:
    rows = "\n".join(json.dumps({"id": i}) for i in range(5))
    assert kv(url, "put", "o", "--file", "-", "--format", "ndjson", "--batch-size", "3", input=rows).code == 0
    kv(url, "put", "o", '{"id": 9}')
    first = kv(url, "changes", "o", "--limit", "4")  # revision 1 has 3 events, revision 2 has 2
    assert [e["revision"] for e in events(first)] == [1, 1, 1]
    assert "kvctl changes o --since 1" in first.err
    second = kv(url, "changes", "o", "--since", "1", "--limit", "1")  # a revision larger than the limit comes whole
    assert [e["key"]["id"] for e in events(second)] == [3, 4] and "--since 2" in second.err
    last = kv(url, "changes", "o", "--since", "2", "--limit", "5")
    assert [e["revision"] for e in events(last)] == [3] and last.err == ""


def test_compact(url: str) -> None:
    for i in range(4):
        kv(url, "put", "o", json.dumps({"id": i}))
    assert_one_error(kv(url, "changes", "compact", "--before", "3"), 2)  # no --yes: nothing forgotten
    assert len(events(kv(url, "changes", "o"))) == 4
    assert_one_error(kv(url, "changes", "compact", "--before", "9", "--yes"), 2)  # beyond the store
    assert_one_error(kv(url, "changes", "compact", "--yes"), 2)  # no --before
    done = kv(url, "changes", "compact", "--before", "3", "--yes")
    assert done.code == 0 and done.out == ""
    assert [e["revision"] for e in events(kv(url, "changes", "o", "--since", "2"))] == [3, 4]
    gone = kv(url, "changes", "o", "--since", "0")
    assert_one_error(gone, 1)
    assert "compacted through revision 2" in gone.err and "read from revision 2" in gone.err
    assert_one_error(kv(url, "watch", "o", "--since", "1", "--timeout", "1"), 1)
    # Without --since: from the oldest revision kept, however often the feed is compacted.
    assert [e["revision"] for e in events(kv(url, "changes", "o"))] == [3, 4]
    assert [e["revision"] for e in events(kv(url, "changes"))] == [3, 4]
    kv(url, "put", "o", json.dumps({"id": 9}))
    assert kv(url, "changes", "compact", "--before", "5", "--yes").code == 0
    assert [e["key"]["id"] for e in events(kv(url, "changes", "o", "-o", "json"))] == [9]
    page = kv(url, "changes", "o", "--limit", "1")
    assert page.code == 0 and page.err == "" and [e["revision"] for e in events(page)] == [5]


def test_errors_and_exit_codes(url: str) -> None:
    missing = kv(url, "watch", "nope", "--timeout", "1")
    assert_one_error(missing, 1)
    plain = kv(url, "watch", "plain", "--timeout", "1")
    assert_one_error(plain, 2)
    assert "kvctl table alter plain --changes" in plain.err
    assert_one_error(kv(url, "changes", "plain"), 2)
    assert_one_error(kv(url, "get", "plain", "id=1", "--watch", "--timeout", "1"), 2)
    assert kv(url, "watch", "o", "--since", "x").code == 2
    assert_one_error(kv(url, "watch", "o", "--since", "-1", "--timeout", "1"), 2)
    assert_one_error(kv(url, "changes", "o", "--since", "-3"), 2)
    assert_one_error(kv(url, "watch", "o", "--timeout", "soon"), 2)
    assert_one_error(kv(url, "watch", "o", "s=1", "--timeout", "1"), 2)  # not a key column
    assert_one_error(kv(url, "get", "o", "id=1", "--timeout", "1"), 2)  # --timeout needs --watch
    for args in (["watch", "o", "--timeout", "1"], ["changes", "o"], ["get", "o", "id=1", "--watch", "--timeout", "1"]):
        for form in ("csv", "tsv", "table"):
            res = kv(url, *args, "-o", form)
            assert_one_error(res, 2)
            assert "-o json or -o ndjson" in res.err and res.out == ""
        assert_one_error(kv(url, "-o", "csv", *args), 2)  # the global -o too
    for args in (["watch", "o", "--timeout", "1"], ["changes", "o"]):
        bad = kv(url, *args, "--ops", "put,update")
        assert_one_error(bad, 2)
        assert "put, delete, expire" in bad.err and "'update'" in bad.err
    assert_one_error(kv(url, "watch", "o", "--progress", "0", "--timeout", "1"), 2)
    assert_one_error(kv(url, "watch", "o", "--progress", "soon", "--timeout", "1"), 2)
    assert_one_error(kv(url, "watch", "o", "--initial", "--since", "0", "--timeout", "1"), 2)


def test_created_prev_and_ops(url: str) -> None:
    kv(url, "put", "o", '{"id": 1, "s": "a"}')
    kv(url, "put", "o", '{"id": 1, "s": "b"}')
    kv(url, "delete", "o", "id=1")
    kv(url, "put", "o", '{"id": 2, "s": "c"}', "--ttl", "0.01")  # expired before the sweep's process starts
    assert kv(url, "table", "sweep", "o").out == "1\n"
    got = events(kv(url, "changes", "o", "--prev"))
    assert [(e["op"], e["created"], e["prev"]) for e in got] == [
        ("put", True, None),
        ("put", False, {"id": 1, "s": "a", "b": None}),
        ("delete", None, {"id": 1, "s": "b", "b": None}),
        ("put", True, None),
        ("expire", None, {"id": 2, "s": "c", "b": None}),
    ]
    assert got[3]["expires"] is not None and got[4]["expires"] is None
    assert events(kv(url, "changes", "o", "--ops", "delete,expire")) == [
        {k: v for k, v in e.items() if k != "prev"} for e in got[2:5:2]
    ]
    watched = kv(url, "watch", "o", "--since", "0", "--ops", "expire,put", "--prev", "--timeout", "0.3")
    assert events(watched) == [got[i] for i in (0, 1, 3, 4)]
    keyed = kv(url, "watch", "o", "id=1", "--since", "0", "--ops", "delete", "--timeout", "0.3")
    assert [e["revision"] for e in events(keyed)] == [3]
    page = kv(url, "changes", "o", "--ops", "put", "--prev", "--limit", "1")
    assert [e["revision"] for e in events(page)] == [1] and "kvctl changes o --prev --ops put --since 1" in page.err


def test_watch_follows_other_processes_and_stops(url: str) -> None:
    kv(url, "put", "o", '{"id": 1}')
    watcher = spawn(url, "watch", "o", "--count", "3", "--timeout", "60")
    assert ready(watcher) == 1  # it starts at the current revision: id 1 is not shown
    for i in (2, 3):
        kv(url, "put", "o", json.dumps({"id": i}))
    kv(url, "delete", "o", "id=2")
    out, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert [(e["op"], e["key"]["id"]) for e in got] == [("put", 2), ("put", 3), ("delete", 2)]
    replay = kv(url, "watch", "o", "--since", "0", "--timeout", "0.5")
    assert replay.code == 0 and len(events(replay)) == 4
    keyed = kv(url, "watch", "o", "id=2", "--since", "0", "--timeout", "0.3")
    assert [e["op"] for e in events(keyed)] == ["put", "delete"]
    prefixed = kv(url, "watch", "o", "--prefix", "id=3", "--since", "0", "--timeout", "0.3")
    assert [e["key"]["id"] for e in events(prefixed)] == [3]


def test_watch_lines_are_flushed_as_events_happen(url: str) -> None:
    watcher = spawn(url, "watch", "o", "--timeout", "60")
    try:
        ready(watcher)
        kv(url, "put", "o", '{"id": 7}')
        assert watcher.stdout is not None
        line = watcher.stdout.readline()  # arrives while the watcher keeps running
        assert json.loads(line)["key"] == {"id": 7} and watcher.poll() is None
        watcher.send_signal(signal.SIGINT)
        _, err = watcher.communicate(timeout=30)
        assert watcher.returncode == 130 and err.strip() == "error: interrupted"
    finally:
        if watcher.poll() is None:
            watcher.kill()


@pytest.mark.timing
def test_watch_ends_quietly_on_a_closed_pipe(url: str) -> None:
    for i in range(3):
        kv(url, "put", "o", json.dumps({"id": i}))
    cmd = f"{sys.executable} -m kvctl --url '{url}' watch o --since 0 --timeout 60 | head -n 1"
    proc = subprocess.Popen(
        ["bash", "-o", "pipefail", "-c", cmd],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        # head exits after one line; the watcher sees the closed pipe when it writes
        # its next event (the first ones may still fit in the pipe before head exits)
        started = time.monotonic()
        for i in range(3, 40):
            kv(url, "put", "o", json.dumps({"id": i}))
            try:
                proc.wait(0.2)
                break
            except subprocess.TimeoutExpired:
                continue
        out, err = proc.communicate(timeout=30)
        ended = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    assert json.loads(first)["key"] == {"id": 0} and out == ""
    assert "Traceback" not in err and err == "watching o from revision 0\n"
    assert proc.returncode == 0
    assert ended < 20, ended  # ended by the closed pipe, not by --timeout


def test_get_watch_prints_the_row_after_each_change(url: str) -> None:
    kv(url, "put", "o", '{"id": 1, "s": "a"}')
    watcher = spawn(url, "get", "o", "id=1", "--watch", "--versions", "--columns", "s", "--timeout", "60")
    assert watcher.stdout is not None
    lines = [watcher.stdout.readline()]  # the row as it is: the watch has begun
    kv(url, "update", "o", "id=1", "--set", "s=b")
    kv(url, "put", "o", '{"id": 2, "s": "other"}')  # another key: not shown
    kv(url, "delete", "o", "id=1")
    kv(url, "put", "o", '{"id": 1}')
    lines += [watcher.stdout.readline() for _ in range(3)]
    watcher.send_signal(signal.SIGINT)
    out, _ = watcher.communicate(timeout=30)
    assert out == ""  # nothing more
    assert [json.loads(line) for line in lines] == [
        {"id": 1, "s": "a", "_version": 1},
        {"id": 1, "s": "b", "_version": 2},
        None,
        {"id": 1, "s": None, "_version": 1},
    ]
    missing = kv(url, "get", "o", "id=5", "--watch", "--timeout", "0.3")
    assert (missing.code, missing.out) == (0, "")  # a missing row prints nothing, then waits


def test_table_create_and_alter_turn_the_feed_on_and_off(url: str, tmp_path: Path) -> None:
    described = json.loads(kv(url, "table", "describe", "o", "-o", "json").out)
    assert described["changes"] is True
    assert "changes" not in json.loads(kv(url, "table", "describe", "plain", "-o", "json").out)
    assert kv(url, "table", "alter", "plain", "--changes").code == 0
    kv(url, "put", "plain", '{"id": 1}')
    assert [e["table"] for e in events(kv(url, "changes", "plain"))] == ["plain"]
    assert kv(url, "table", "alter", "plain", "--no-changes", "--add-field", "x:long").code == 0
    spec = json.loads(kv(url, "table", "describe", "plain", "-o", "json").out)
    assert "changes" not in spec and [f["name"] for f in spec["fields"]] == ["id", "x"]
    assert_one_error(kv(url, "changes", "plain"), 2)
    spec_file = tmp_path / "s.json"
    spec_file.write_text(json.dumps({**spec, "changes": True}))
    assert kv(url, "table", "alter", "plain", "--spec", str(spec_file)).code == 0
    assert json.loads(kv(url, "table", "describe", "plain", "-o", "json").out)["changes"] is True
    assert_one_error(kv(url, "table", "alter", "plain", "--spec", str(spec_file), "--no-changes"), 2)
    toml = tmp_path / "t.toml"
    toml.write_text('changes = true\nprimary_key = ["k"]\n[[fields]]\nname = "k"\ntype = "long"\n')
    assert kv(url, "table", "create", "t2", "--spec", str(toml)).code == 0
    assert json.loads(kv(url, "table", "describe", "t2", "-o", "json").out)["changes"] is True


def test_watch_and_changes_on_postgres(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = provider_url("postgres", tmp_path, request)
    assert kv(url, "table", "create", "t", "--field", "id:long", "--pk", "id", "--changes").code == 0
    assert kv(url, "revision").out == "0\n"
    watcher = spawn(url, "watch", "t", "--count", "2", "--timeout", "60")
    assert ready(watcher) == 0
    kv(url, "put", "t", '{"id": 1}')
    kv(url, "delete", "t", "id=1")
    out, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err
    assert [(e["revision"], e["op"]) for e in map(json.loads, out.splitlines())] == [(1, "put"), (2, "delete")]
    assert [e["op"] for e in events(kv(url, "changes", "t"))] == ["put", "delete"]
    assert kv(url, "changes", "compact", "--before", "2", "--yes").code == 0
    assert_one_error(kv(url, "changes", "t", "--since", "0"), 1)
    assert [e["op"] for e in events(kv(url, "changes", "t"))] == ["delete"]
    kv(url, "put", "t", '{"id": 2}')
    kv(url, "put", "t", '{"id": 2}')
    assert [(e["created"], e["prev"]) for e in events(kv(url, "changes", "t", "--prev", "--ops", "put"))] == [
        (True, None), (False, {"id": 2})
    ]  # fmt: skip
    start = kv(url, "watch", "t", "--initial", "--progress", "0.1", "--timeout", "0.3")
    lines = events(start)
    assert lines[:2] == [{**lines[0], "key": {"id": 2}, "initial": True, "revision": 4}, {"progress": 4}]
    assert start.err == "watching t from revision 4\n"


def test_watch_count_ends_at_a_revision_boundary(url: str) -> None:
    three = "\n".join(json.dumps({"id": i}) for i in (1, 2, 3))  # one transaction, one revision of 3 events
    watcher = spawn(url, "watch", "o", "--count", "2", "--timeout", "60")
    assert ready(watcher) == 0
    assert kv(url, "put", "o", "--file", "-", "--format", "ndjson", input=three).code == 0
    kv(url, "put", "o", '{"id": 4}')
    out, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err
    assert [(e["revision"], e["key"]["id"]) for e in map(json.loads, out.splitlines())] == [(1, 1), (1, 2), (1, 3)]
    replay = kv(url, "watch", "o", "--since", "0", "--count", "1", "--timeout", "60")  # no wait for revision 2
    assert [e["key"]["id"] for e in events(replay)] == [1, 2, 3]
    filtered = kv(url, "watch", "o", "--since", "0", "--prefix", "id=2", "--count", "1", "--timeout", "0.3")
    assert [e["key"]["id"] for e in events(filtered)] == [2]
    # --count counts initial lines too, and a snapshot ends whole with its progress line
    initial = kv(url, "watch", "o", "--initial", "--count", "2", "--timeout", "60")
    assert [e.get("key", e) for e in events(initial)] == [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"progress": 2}]
    assert all(e["revision"] == 2 and e["initial"] is True for e in events(initial)[:4])


_WRITER = textwrap.dedent(
    """
    import os, sys, time, spi
    with spi.connect(sys.argv[1]) as p:
        t = p.table("o")
        for i in range(20_000):
            if os.path.exists(sys.argv[2]):
                break
            if i % 7 == 6:
                t.delete({"id": (i * 3) % 40})
            else:
                t.upsert({"id": i % 40, "s": str(i)})
            if i == 30:
                print("writing", flush=True)
            time.sleep(0.002)  # pacing: leave the watcher its turns at the database
    """
)


def test_watch_initial_under_a_concurrent_writer(url: str, tmp_path: Path) -> None:
    """The starting rows, then the live events after their revision, give exactly the
    table as it ends: nothing missed or doubled between the snapshot and the feed."""
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, url, str(stop)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    watcher = None
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        watcher = spawn(url, "watch", "o", "--initial", "--timeout", "2")
        assert watcher.stdout is not None and watcher.stderr is not None
        lines: list[dict[str, Any]] = []
        after = None  # lines since the snapshot's progress line
        while after is None or after < 20:  # the snapshot, then 20 live events
            lines.append(json.loads(watcher.stdout.readline()))
            after = 0 if "progress" in lines[-1] else None if after is None else after + 1
        stop.touch()
        assert writer.wait(60) == 0
        lines += [json.loads(line) for line in watcher.stdout.read().splitlines()]  # ends 2 s after the writer
        assert watcher.wait(60) == 0
        err = watcher.stderr.read()
    finally:
        for proc in (writer, watcher):
            if proc is not None and proc.poll() is None:
                proc.kill()
    cut = lines.index(next(line for line in lines if "progress" in line))
    start = lines[cut]["progress"]
    assert err == f"watching o from revision {start}\n"
    rows = {e["key"]["id"]: e["row"] for e in lines[:cut]}
    assert rows, "the snapshot saw the writer's first rows"
    assert all(e["initial"] is True and e["revision"] == start and e["op"] == "put" for e in lines[:cut])
    live = lines[cut + 1 :]
    assert all("initial" not in e and "progress" not in e for e in live)
    for e in live:
        if e["op"] == "put":
            rows[e["key"]["id"]] = e["row"]
        else:
            rows.pop(e["key"]["id"])
    final = {r["id"]: r for r in events(kv(url, "scan", "o", "--all"))}
    assert rows == final
    assert [e["revision"] for e in live] == list(range(start + 1, int(kv(url, "revision").out) + 1))


def test_watch_progress_then_resume_misses_nothing(url: str) -> None:
    kv(url, "put", "o", '{"id": 1}')
    watcher = spawn(url, "watch", "o", "--progress", "0.2", "--timeout", "60")
    try:
        assert ready(watcher) == 1
        kv(url, "put", "o", '{"id": 2}')
        assert watcher.stdout is not None
        line = json.loads(watcher.stdout.readline())
        while "progress" in line:  # bookmarks of revision 1 while the put's process starts (0.2 s each)
            assert line == {"progress": 1}
            line = json.loads(watcher.stdout.readline())
        first = [line]
        while "progress" not in first[-1]:
            first.append(json.loads(watcher.stdout.readline()))
        progress = first.pop()["progress"]
        assert [e["key"]["id"] for e in first] == [2] and progress >= 2
        assert json.loads(watcher.stdout.readline()) == {"progress": progress}  # again, while nothing happens
        watcher.send_signal(signal.SIGINT)
        watcher.communicate(timeout=30)
        assert watcher.returncode == 130
    finally:
        if watcher.poll() is None:
            watcher.kill()
    kv(url, "put", "o", '{"id": 3}')
    kv(url, "delete", "o", "id=2")
    resumed = kv(url, "watch", "o", "--since", str(progress), "--count", "2", "--timeout", "60")
    assert [e["revision"] for e in first + events(resumed)] == [
        e["revision"] for e in events(kv(url, "changes", "o", "--since", "1"))
    ]
    assert [(e["op"], e["key"]["id"]) for e in events(resumed)] == [("put", 3), ("delete", 2)]
