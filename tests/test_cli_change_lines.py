"""``watch``, ``changes`` and ``get --watch`` print compact JSON lines whatever ``-o json``
or ``-o ndjson`` says, so ``kvctl -o json changes T | kvctl apply T2`` works; any
other ``-o`` exits 2 saying so (CLI.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_support import REPO, Kvctl, assert_one_error

import spi

SPEC = spi.TableSpec("t", [spi.Field("id", "long"), spi.Field("name", "string")], ["id"], changes=True)


def _kvctl(*args: str) -> list[str]:
    return [sys.executable, "-m", "kvctl", *args]


def test_json_changes_pipe_into_apply(tmp_path: Path) -> None:
    src, dst = f"rocksdb://{tmp_path / 'src'}", f"rocksdb://{tmp_path / 'dst'}"
    with spi.connect(src) as p:
        p.admin.create(SPEC)
        p.table("t").load([{"id": i, "name": f"n{i}"} for i in range(10)])
        p.table("t").upsert({"id": 3, "name": "again"})
        p.table("t").delete((4,))
    with spi.connect(dst) as p:
        p.admin.create(spi.TableSpec("t2", SPEC.fields, SPEC.primary_key))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    changes = subprocess.Popen(_kvctl("--url", src, "-o", "json", "changes", "t"), stdout=subprocess.PIPE, env=env)
    assert changes.stdout is not None
    applied = subprocess.run(
        _kvctl("--url", dst, "apply", "t2"), stdin=changes.stdout, capture_output=True, text=True, env=env
    )
    changes.stdout.close()
    assert changes.wait() == 0
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout == "3\n"  # the load, the upsert, the delete
    with spi.connect(src) as s, spi.connect(dst) as d:
        assert [dict(r) for r in d.table("t2").scan()] == [dict(r) for r in s.table("t").scan()]


def test_json_and_ndjson_print_the_same_lines_and_other_formats_exit_2(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("t").upsert({"id": 1, "name": "a"})
        p.table("t").upsert({"id": 2, "name": "b"})
    kvctl = Kvctl(url)
    lines = kvctl("changes", "t")
    assert lines.code == 0 and [json.loads(line)["key"] for line in lines.lines()] == [{"id": 1}, {"id": 2}]
    assert all(" " not in line for line in lines.lines())  # compact
    assert kvctl("changes", "t", "-o", "json").out == lines.out
    assert kvctl("-o", "json", "changes", "t").out == lines.out
    assert kvctl("changes", "t", "-o", "ndjson").out == lines.out
    watched = kvctl("-o", "json", "watch", "t", "--since", "0", "--count", "2")
    assert watched.lines() == lines.lines()
    for args in (["changes", "t"], ["watch", "t", "--timeout", "1"], ["get", "t", "id=1", "--watch", "--timeout", "1"]):
        for form in ("table", "csv", "tsv"):
            res = kvctl("-o", form, *args)
            assert_one_error(res, 2)
            assert "prints JSON lines, one event a line" in res.err and f"not -o {form}" in res.err, res.err
