"""A bulk command that stops part-way says what stayed (issue 34): real ``kvctl``
processes interrupted (SIGINT: exit 130) or terminated (SIGTERM: exit 143) after some
batches committed, or failing part-way, print ``N of M rows written`` / ``N revisions
applied`` and the command that finishes the job, and the store holds exactly that;
an internal error exits 4."""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest
from cli_support import REPO, Kvctl, Result, assert_one_error, provider_url, run_process, until
from dashboard_support import Tmux, dashboard_command, filled, terminal, wait_for_file
from typer.testing import CliRunner

import spi
from kvctl.app import app
from kvctl.errors import CliError
from kvctl.logs import PACKAGES
from kvctl.partway import Tally, reporting

ROWS = 1_000_000
"""Rows of the big input: more than a run loads in the seconds before the signal."""
BATCH = "200"
LARGE = 200_000
"""Rows of one source revision that takes seconds to apply."""
T = spi.TableSpec("t", [spi.Field("id", "long"), spi.Field("name", "string")], ["id"])
FED = spi.TableSpec("t", [spi.Field("id", "long"), spi.Field("name", "string")], ["id"], changes=True)
STOPPED = re.compile(
    r"error: (interrupted|terminated); (\d+)( of (\d+))? rows? written; to finish \((.*?)\): (kvctl .*)"
)


def _start(*args: str, stdin: IO[Any] | int | None = subprocess.DEVNULL) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kvctl", *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _stop(proc: subprocess.Popen[str], sig: int) -> Result:
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return Result(proc.returncode, out, err)


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def _writing(proc: subprocess.Popen[str], grew: Any) -> None:
    """Wait until ``grew()`` says some batches committed (the process still running)."""
    assert until(lambda: grew() or proc.poll() is not None, 60), "nothing was written within 60 s"
    assert proc.poll() is None, proc.communicate()


def _count(url: str) -> int:
    """Rows of table ``t`` (0 while it does not exist)."""
    with spi.connect(url) as p:
        return p.table("t").count() if p.admin.exists("t") else 0


def _big_csv(path: Path) -> Path:
    with path.open("w") as f:
        f.write("id,name\n")
        f.writelines(f"{i},name{i}\n" for i in range(ROWS))
    return path


def _store(kind: str, tmp_path: Path, request: pytest.FixtureRequest, spec: spi.TableSpec = T) -> str:
    url = provider_url(kind, tmp_path, request)
    with spi.connect(url) as p:
        p.admin.create(spec)
    return url


def _grown(url: str, by: int = 2 << 20) -> Any:
    """A check that some batches went into the store at ``url`` (RocksDB: its files grew
    by ``by`` bytes, as it cannot be opened while the command has it; PostgreSQL: rows)."""
    if url.startswith("rocksdb://"):
        db = Path(url.removeprefix("rocksdb://"))
        start = _size(db)
        return lambda: _size(db) > start + by
    return lambda: _count(url) > 0


@pytest.mark.parametrize(("kind", "sig"), [("rocksdb", signal.SIGINT), ("postgres", signal.SIGTERM)])
def test_put_file_stopped_part_way(kind: str, sig: int, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _store(kind, tmp_path / "db", request)
    first = int(kind == "rocksdb")  # a row first: into an empty RocksDB table a load commits in chunks
    if first:  # (tests/test_kv_chunked_load.py); this test is about loads batch by batch
        with spi.connect(url) as p:
            p.table("t").upsert({"id": -1, "name": "first"})
    data = _big_csv(tmp_path / "big.csv")
    proc = _start("--url", url, "put", "t", "--file", str(data), "--batch-size", BATCH)
    _writing(proc, _grown(url))
    res = _stop(proc, sig)
    assert_one_error(res, 130 if sig == signal.SIGINT else 143)
    said = STOPPED.fullmatch(res.err.strip())
    assert said is not None, res.err
    word, written, total, note, finish = said.group(1, 2, 4, 5, 6)
    assert word == ("interrupted" if sig == signal.SIGINT else "terminated") and note == "a rerun upserts"
    assert int(total) == ROWS and 0 < int(written) < ROWS and res.out == ""
    assert _count(url) == int(written) + first  # what it says stayed, stayed
    assert shlex.split(finish)[1:] == ["--url", url, "put", "t", "--file", str(data), "--batch-size", BATCH]
    if kind == "rocksdb":  # the command it names finishes the job
        assert run_process(*shlex.split(finish)[1:]).out == f"{ROWS}\n"
        assert _count(url) == ROWS + 1


def test_put_file_interrupted_before_writing_says_only_interrupted(tmp_path: Path) -> None:
    """Pass 1 (reading and checking the input) writes nothing: plain ``error: interrupted``."""
    url = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(url) as p:
        p.admin.create(T)
    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)
    proc = _start("--url", url, "put", "t", "--file", str(fifo), "--format", "csv")
    with fifo.open("w") as writer:  # opened once kvctl reads it: the SIGINT handler is in place
        writer.write("id,name\n1,a\n")
        writer.flush()
        proc.send_signal(signal.SIGINT)
    # closed: a signal that another thread of kvctl took is acted on once the read of the FIFO returns
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (130, "", "error: interrupted\n")
    assert _count(url) == 0


def test_copy_terminated_part_way(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    src = f"rocksdb://{tmp_path / 'src'}"
    with spi.connect(src) as p:
        p.admin.create(T)
        p.table("t").load(({"id": i, "name": f"n{i}"} for i in range(300_000)), batch_size=50_000)
    dst = _store("postgres", tmp_path, request)
    proc = _start("copy", src, dst, "t", "--batch-size", BATCH)
    _writing(proc, _grown(dst))
    res = _stop(proc, signal.SIGTERM)
    assert_one_error(res, 143)
    said = re.fullmatch(r"error: terminated; (\d+) rows written; to finish \((.*)\): (kvctl .*)", res.err.strip())
    assert said is not None, res.err
    assert said.group(2) == "it upserts, versions kept"
    assert shlex.split(said.group(3))[1:] == ["copy", src, dst, "t", "--batch-size", BATCH, "--mode", "append"]
    assert _count(dst) == int(said.group(1)) > 0
    finished = run_process(*shlex.split(said.group(3))[1:], "--batch-size", "10000")
    assert finished.code == 0, finished
    assert _count(dst) == 300_000


def _event(revision: int) -> str:
    row = {"id": revision, "name": f"n{revision}"}
    return json.dumps(
        {"revision": revision, "table": "src", "op": "put", "key": {"id": revision}, "row": row, "version": 1}
    )


def test_apply_interrupted_part_way(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _store("rocksdb", tmp_path / "db", request)
    events = tmp_path / "events.ndjson"
    events.write_text("".join(_event(r) + "\n" for r in range(1, 200_001)))
    with events.open() as stdin:
        proc = _start("--url", url, "apply", "t", stdin=stdin)
        _writing(proc, _grown(url, 200_000))
        res = _stop(proc, signal.SIGINT)
    assert_one_error(res, 130)
    said = re.fullmatch(
        r"error: interrupted; (\d+) revisions? applied; to finish \((.*)\): (kvctl .*)", res.err.strip()
    )
    assert said is not None, res.err
    assert said.group(2) == "revisions applied are skipped with the same input"
    assert shlex.split(said.group(3))[1:] == ["--url", url, "apply", "t"]
    assert _count(url) == int(said.group(1)) > 0  # one row per revision


def test_copy_follow_terminated_says_revisions_applied(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    src = f"rocksdb://{tmp_path / 'src'}"
    with spi.connect(src) as p:
        p.admin.create(FED)
        p.table("t").load({"id": i, "name": "old"} for i in range(10))
    dst = provider_url("postgres", tmp_path, request)
    proc = _start("copy", src, dst, "t", "--follow")
    assert proc.stderr is not None
    lags = [proc.stderr.readline() for _ in range(2)]  # "created table ...", then the first lag line
    assert re.fullmatch(r"\d\d:\d\d:\d\d lag: 0 revisions, 0 s\n", lags[1]), lags
    with spi.connect(src) as p:
        for i in range(7):
            p.table("t").upsert({"id": 100 + i, "name": "new"})  # one revision each
    assert until(lambda: _count(dst) == 17, 20)
    res = _stop(proc, signal.SIGTERM)
    assert res.code == 143, res
    last = res.err.splitlines()[-1]
    said = re.fullmatch(
        r"error: terminated; 10 rows written, (\d+) revisions applied; to resume \((.*)\): (kvctl .*)", last
    )
    assert said is not None, res.err
    assert int(said.group(1)) == 7 and said.group(2) == "nothing is copied or applied twice"
    assert shlex.split(said.group(3))[1:] == ["copy", src, dst, "t", "--follow", "--mode", "append"]
    assert all(re.match(r"\d\d:\d\d:\d\d lag: ", line) for line in res.err.splitlines()[:-1]), res.err
    assert "Traceback" not in res.err


def test_put_file_failing_part_way_says_what_stayed(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(url) as p:
        p.admin.create(T)
        p.table("t").upsert({"id": 25, "name": "taken"})
    data = tmp_path / "in.csv"
    data.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(50)))
    res = run_process("--url", url, "put", "t", "--file", str(data), "--mode", "insert", "--batch-size", "10")
    assert_one_error(res, 1)
    prefix = f"error: {data} line 27: a row with key id=25 already exists in 't'; 20 of 50 rows written; "
    assert res.err.startswith(prefix), res.err
    assert "nothing was written" not in res.err
    finish = res.err.strip().removeprefix(prefix)
    assert finish.startswith("to finish (upserting): kvctl "), res.err
    args = shlex.split(finish.split(": ", 1)[1])[1:]
    assert args == ["--url", url, "put", "t", "--file", str(data), "--mode", "upsert", "--batch-size", "10"]
    assert _count(url) == 21
    assert run_process(*args).out == "50\n" and _count(url) == 50
    first = run_process("--url", url, "put", "t", "--file", str(data), "--mode", "insert", "--batch-size", "100")
    assert_one_error(first, 1)
    assert first.err.rstrip().endswith("already exists in 't'; nothing was written"), first.err


def test_a_stores_nothing_was_written_is_dropped_once_rows_were() -> None:
    """etcd says "nothing was written" of the one transaction it refused; the command
    says what it wrote, and a bad-input failure after writing exits 1, not 2."""
    tally = Tally(100)
    with pytest.raises(CliError) as caught, reporting(tally, lambda: "to finish (a rerun upserts): kvctl x"):
        tally.progress()(40)
        raise spi.LimitExceededError(
            "this transaction writes 2000 etcd keys; one etcd transaction holds at most 1024 operations "
            "(max_txn_ops, the members' --max-txn-ops): nothing was written; split it into smaller transactions"
        )
    assert str(caught.value) == (
        "this transaction writes 2000 etcd keys; one etcd transaction holds at most 1024 operations "
        "(max_txn_ops, the members' --max-txn-ops); split it into smaller transactions; "
        "40 of 100 rows written; to finish (a rerun upserts): kvctl x"
    )
    assert caught.value.exit_code == 1
    with pytest.raises(spi.LimitExceededError), reporting(Tally(), lambda: "never"):
        raise spi.LimitExceededError("too big: nothing was written")


def test_an_internal_error_exits_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    kv = Kvctl(f"rocksdb://{tmp_path / 'db'}")
    with spi.connect(kv.url) as p:
        p.admin.create(T)

    def bug(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("kvctl.commands.rows.parse_key", bug)  # a bug in kvctl, simulated
    res = kv("get", "t", "id=1")
    assert_one_error(res, 4)
    assert "internal error (a bug in kvctl): RuntimeError: boom; please report it" in res.err
    assert "--debug" in res.err
    assert any(r.levelname == "ERROR" and "RuntimeError: boom" in r.getMessage() for r in caplog.records)
    loggers = [logging.getLogger(name) for name in PACKAGES]
    kept = [(logger.level, list(logger.handlers)) for logger in loggers]
    try:  # --debug sends the packages' records to this run's stderr
        debug = Result.of(CliRunner().invoke(app, ["--url", kv.url, "--debug", "get", "t", "id=1"]))
    finally:
        for logger, (level, handlers) in zip(loggers, kept):
            logger.setLevel(level)
            logger.handlers[:] = handlers
    assert debug.code == 4 and "Traceback" in debug.err and "RuntimeError: boom" in debug.err
    assert debug.err.splitlines()[-1].startswith("error: internal error")


def test_lag_lines_come_every_second_while_a_large_revision_is_applied(tmp_path: Path) -> None:
    src, dst = f"rocksdb://{tmp_path / 'src'}", f"rocksdb://{tmp_path / 'dst'}"
    with spi.connect(src) as p:
        p.admin.create(FED)
    assert run_process("copy", src, dst, "t", "--follow", "--until-caught-up").code == 0
    with spi.connect(src) as p, p.transaction() as tx:  # one revision of many rows
        tx.table("t").load({"id": i, "name": "x" * 40} for i in range(LARGE))
    time.sleep(1.1)  # its commit is more than a second old
    proc = _start("copy", src, dst, "t", "--follow", "--until-caught-up", "--mode", "append")
    assert proc.stderr is not None
    arrivals = [(time.monotonic(), line.rstrip("\n")) for line in proc.stderr]
    assert proc.wait() == 0, arrivals
    lags = [
        (at, line) for at, line in arrivals if re.fullmatch(r"\d\d:\d\d:\d\d lag: [1-9]\d* revisions?, \d+ s", line)
    ]
    assert len(lags) >= 2, arrivals
    assert max(b[0] - a[0] for a, b in itertools.pairwise(lags)) < 1.5, arrivals
    assert re.fullmatch(r"\d\d:\d\d:\d\d lag: 0 revisions, 0 s", arrivals[-1][1]), arrivals
    assert _count(dst) == LARGE


tmux = pytest.fixture(terminal)


def test_sigterm_ends_the_dashboard_cleanly(tmux: Tmux, tmp_path: Path) -> None:
    """SIGTERM stops the dashboard as Ctrl-C would: exit 143, the terminal given back."""
    url = f"rocksdb://{tmp_path}/db"
    with spi.connect(url) as p:
        filled(p)
    status, modes = tmp_path / "exit-status", tmp_path / "stty"
    command = dashboard_command(url, tmp_path / "state", status=status)
    tmux.start(f"{command}; stty -a > {shlex.quote(str(modes))}; sleep 60")
    tmux.wait_for(lambda s: "orders" in s and "150" in s, "the table list")
    shell = int(tmux.run("display-message", "-p", "-t", "dash", "#{pane_pid}"))
    kvctl = int(Path(f"/proc/{shell}/task/{shell}/children").read_text().split()[0])
    os.kill(kvctl, signal.SIGTERM)
    assert wait_for_file(status).strip() == "143"
    settings = wait_for_file(modes).split()
    assert "icanon" in settings and "echo" in settings  # not left in raw mode
    screen = tmux.wait_for(lambda s: "error: terminated" in s, "the error line")
    assert "Traceback" not in screen and "orders" not in screen  # the dashboard's screen is gone


def test_import_terminated_part_way(spark: Any, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """SIGTERM into a Spark ``import`` once some rows are in PostgreSQL: exit 143,
    ``at least N of M rows written`` (Spark counts a task's rows when it ends, so the
    batches a running task committed are not counted), or ``some of M rows may have been
    written`` while no task has ended, and the command that finishes the job."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    url = _store("postgres", tmp_path, request)
    folder = tmp_path / "in"
    folder.mkdir()
    parts = 30  # enough that the import is still running when the signal comes, on a fast machine too
    for part in range(parts):
        ids = range(part * 20_000, (part + 1) * 20_000)
        pq.write_table(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}), folder / f"part{part}.parquet")
    proc = _start("--url", url, "import", "t", "--in", str(folder), "--format", "parquet")
    assert until(lambda: _count(url) >= 20_000 or proc.poll() is not None, 240), "too slow"
    assert proc.poll() is None, proc.communicate()
    res = _stop(proc, signal.SIGTERM)
    assert_one_error(res, 143)
    said = re.fullmatch(rf"error: terminated; (at least (\d+) of|some of) {parts * 20_000} rows (may have been )?written; "
                        r"to finish \(a rerun upserts\): (kvctl .*)", res.err.strip())  # fmt: skip
    assert said is not None, res.err
    written, finish = int(said.group(2) or 0), said.group(4)
    assert (said.group(1) == "some of") == (said.group(3) is not None) == (written == 0)
    assert written <= _count(url)  # (tasks running when the jobs were cancelled may finish their rows)
    assert run_process(*shlex.split(finish)[1:]).code == 0
    assert _count(url) == parts * 20_000
