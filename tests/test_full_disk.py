"""A disk that fills up under ``kvctl put --file`` (issue 39's attack, and findings of
bench/chaos.py): real processes whose files may not grow past a limit (RLIMIT_FSIZE:
a write past it fails with EFBIG, as a full disk's does with ENOSPC; Python ignores
SIGXFSZ). The temp spool that cannot grow is named, with ``TMPDIR``, nothing written;
a RocksDB commit that cannot grow its log exits 3 saying how many rows stayed, blaming
no input line, and the store takes the rest once there is room again."""

from __future__ import annotations

import json
import re
import resource
import shlex
from collections.abc import Callable
from pathlib import Path

from cli_support import assert_one_error, run_process

import spi

SPEC = spi.TableSpec("t", [spi.Field("id", "long"), spi.Field("v", "string")], ["id"], indexes=["v"])


def _file_limit(limit: int) -> Callable[[], None]:
    """A ``preexec_fn``: the child's files may not grow past ``limit`` bytes."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _store(tmp_path: Path) -> str:
    url = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(url) as p:
        p.admin.create(SPEC)
    return url


def _rows(path: Path, n: int) -> Path:
    """``n`` NDJSON rows of about 85 bytes."""
    path.write_text("".join(json.dumps({"id": i, "v": "x" * 60 + str(i)}) + "\n" for i in range(n)))
    return path


def _count(url: str) -> int:
    with spi.connect(url) as p:
        assert p.admin.verify("t") == []
        return p.table("t").count()


def test_a_spool_that_cannot_grow_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    """Pass 1's temp files (the spool of a file, the copy of stdin) under a 64 KiB limit:
    exit 3 (the environment is short, not the input bad), one line naming the file,
    its folder and TMPDIR."""
    url = _store(tmp_path)
    data = _rows(tmp_path / "rows.ndjson", 20_000)  # 1.7 MB
    spools = tmp_path / "spools"
    spools.mkdir()
    for args, stdin, what in (
        (["--file", str(data)], None, f"the spool of {data}"),
        (["--file", "-"], data.read_text(), "the copy of stdin"),
    ):
        res = run_process(
            "--url", url, "put", "t", *args, input=stdin, env={"TMPDIR": str(spools)}, preexec_fn=_file_limit(64 << 10)
        )
        assert_one_error(res, 3)
        assert f"cannot write {what} in {spools} " in res.err and "File too large" in res.err, res.err
        assert "nothing was written" in res.err and "set TMPDIR to a folder" in res.err
    assert _count(url) == 0 and list(spools.iterdir()) == []


def test_a_rocksdb_commit_on_a_full_disk_exits_3_and_the_store_recovers(tmp_path: Path) -> None:
    """The spool fits, the store's log does not: the failing batch is the store's, so
    the error names no input line; the batches before it stay, whole, and the command
    it prints finishes the job once the limit is gone. (The table holds a row first: a
    load into an empty table commits in chunks, see tests/test_kv_chunked_load.py.)"""
    url = _store(tmp_path)
    with spi.connect(url) as p:
        p.table("t").upsert({"id": -1, "v": "first"})
    data = _rows(tmp_path / "rows.ndjson", 1000)
    res = run_process(
        "--url", url, "put", "t", "--file", str(data), "--batch-size", "100", preexec_fn=_file_limit(100 << 10)
    )
    assert_one_error(res, 3)
    said = re.search(r"File too large; (\d+) of 1000 rows written; to finish \(a rerun upserts\): (kvctl .*)$", res.err)
    assert said is not None, res.err
    assert not re.search(r"rows\.ndjson line \d+", res.err)  # a store failure is not bad input
    written = int(said.group(1))
    assert 0 < written < 1000 and written % 100 == 0 and res.out == ""
    assert _count(url) == written + 1
    again = run_process(*shlex.split(said.group(2))[1:])
    assert (again.code, again.out) == (0, "1000\n"), again.err
    assert _count(url) == 1001


def test_a_sort_whose_temp_runs_cannot_grow_exits_3_naming_tmpdir(tmp_path: Path) -> None:
    """``scan --order-by`` a column without an index spills runs of 50,000 rows to temp
    files: when they cannot grow, one line says so with TMPDIR, exit 3, no traceback."""
    url = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(url) as p:
        p.admin.create(spi.TableSpec("s", [spi.Field("id", "long"), spi.Field("w", "string")], ["id"]))
        p.table("s").load({"id": i, "w": "x" * 60} for i in range(60_000))
    res = run_process(
        "--url", url, "-o", "ndjson", "scan", "s", "--all", "--order-by", "w", preexec_fn=_file_limit(256 << 10)
    )
    assert res.code == 3, res.err
    (line,) = [line for line in res.err.splitlines() if line.startswith("error: ")]
    assert "cannot write a temp file in " in line and "File too large" in line and "set TMPDIR" in line, res.err
    assert "Traceback" not in res.err
