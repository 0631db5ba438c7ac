"""``kvctl apply``: change events onto a table, one transaction per source revision,
idempotent through the applied positions recorded in the destination (spi.applied)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import REPO, Kvctl, assert_one_error, provider_url

import spi
from spi import applied

ITEMS = spi.TableSpec(
    "items",
    [spi.Field("k", "string"), spi.Field("n", "long"), spi.Field("at", "timestamp"), spi.Field("b", "bytes")],
    ["k"],
    changes=True,
)
EXPIRES = dt.datetime(2999, 1, 2, 3, 4, 5, 678_000, tzinfo=dt.UTC)


def _put(revision: int, k: str, n: int, version: int, expires: str | None = None) -> str:
    row = {"k": k, "n": n, "at": "2024-05-01T12:00:00+00:00", "b": "AAE="}
    event = {"revision": revision, "table": "src", "op": "put", "key": {"k": k}, "row": row, "version": version}
    return json.dumps({**event, "time": "2024-05-01T12:00:00+00:00", "expires": expires})


def _delete(revision: int, k: str, op: str = "delete") -> str:
    return json.dumps({"revision": revision, "table": "src", "op": op, "key": {"k": k}, "row": None, "version": None})


STREAM = [
    _put(3, "a", 1, 7, EXPIRES.isoformat()),
    _put(3, "b", 2, 1),
    '{"progress": 3}',
    _put(4, "a", 5, 8),
    _delete(5, "b"),
    _put(5, "c", 9, 4),
    _delete(6, "c", "expire"),
    _put(6, "d", 0, 2, "2999-01-02T03:04:05.678Z"),
]


@pytest.fixture
def dst(tmp_path: Path) -> str:
    url = f"rocksdb://{tmp_path / 'dst'}"
    with spi.connect(url) as p:
        p.admin.create(ITEMS)
    return url


def _rows(url: str) -> dict[str, tuple[int, int, dt.datetime | None]]:
    with spi.connect(url) as p:
        return {r["k"]: (r["n"], r.version, r.expires_at) for r in p.table("items").scan()}


def test_applies_revisions_with_versions_and_expiry_and_reruns_change_nothing(dst: str) -> None:
    kv = Kvctl(dst)
    assert kv.ok("apply", "items", input="\n".join(STREAM) + "\n").out == "4\n"
    expected = {"a": (5, 8, None), "d": (0, 2, EXPIRES)}
    assert _rows(dst) == expected
    with spi.connect(dst) as p:
        assert applied.position(p, "items", "src") == 6
        assert p.admin.list_tables() == ["items"]  # the positions table is hidden
        revision = p.revision()
    # A rerun over an overlapping stream, and the whole stream again: nothing applied, nothing written.
    assert kv.ok("apply", "items", input="\n".join([*STREAM[3:], _put(7, "e", 1, 1)])).out == "1\n"
    assert kv.ok("apply", "items", input="\n".join(STREAM)).out == "0\n"
    with spi.connect(dst) as p:
        assert p.revision() == revision + 1  # only revision 7 was written
    assert _rows(dst) == {**expected, "e": (1, 1, None)}
    # --source: another position, so the same stream applies again.
    assert kv.ok("apply", "items", "--source", "other", input="\n".join(STREAM)).out == "4\n"
    assert kv.ok("table", "list").lines() == ['{"name":"items"}']


def test_a_put_of_the_row_the_destination_holds_records_no_second_event(dst: str) -> None:
    """``copy --follow``'s case: its initial copy read a row ahead of the revision that
    wrote it; applying that revision's put (same version, values, expiry) is a no-op,
    while a put differing in anything is written."""
    kv = Kvctl(dst)
    assert kv.ok("apply", "items", input=_put(3, "a", 1, 7, EXPIRES.isoformat()) + "\n").out == "1\n"
    stream = [
        _put(3, "a", 1, 7, EXPIRES.isoformat()),  # held already: no event
        _put(4, "a", 1, 7),  # the expiry differs
        _put(5, "a", 2, 7),  # a value differs
        _put(6, "a", 2, 9),  # the version differs
        _put(7, "a", 2, 9),  # held already
    ]
    assert kv.ok("apply", "items", "--source", "other", input="\n".join(stream) + "\n").out == "5\n"
    with spi.connect(dst) as p:
        puts = [(c.row["n"], c.version, c.expires_at) for c in p.changes("items") if c.row is not None]
        assert applied.position(p, "items", "other") == 7
    assert puts == [(1, 7, EXPIRES), (1, 7, None), (2, 7, None), (2, 9, None)]
    assert _rows(dst) == {"a": (2, 9, None)}


def test_a_malformed_line_keeps_the_revisions_before_it(dst: str, tmp_path: Path) -> None:
    kv = Kvctl(dst)
    bad = [*STREAM[:4], _put(5, "x", 1, 1), "{not json", _put(6, "y", 1, 1)]
    path = tmp_path / "events.ndjson"
    path.write_text("\n".join(bad) + "\n")
    res = kv("apply", "items", "--file", str(path))
    assert_one_error(res, 2)
    assert "line 6:" in res.err and "the 2 revisions before it were applied" in res.err
    assert _rows(dst) == {"a": (5, 8, None), "b": (2, 1, None)}  # revisions 3 and 4; nothing of 5 (unfinished)
    for line, why in [
        ('{"revision": 9, "table": "src", "op": "put", "key": {"k": "z"}, "row": {"k": "z"}, "version": 1}', "row"),
        (_put(9, "z", 1, 0), "version must be"),
        ('{"revision": 9, "op": "delete", "key": {"k": "z"}}', "no table"),
        (_put(9, "z", 1, 1, "soon"), "ISO 8601"),
        ('{"revision": 9, "table": "src", "op": "drop", "key": {"k": "z"}}', "op must be"),
        ("[1]", "expected a JSON object"),
    ]:
        res = kv("apply", "items", input=line)
        assert_one_error(res, 2)
        assert "line 1:" in res.err and why in res.err and "nothing was applied" in res.err, res.err


def test_mismatched_columns_exit_2_before_applying_anything(dst: str) -> None:
    kv = Kvctl(dst)
    wrong_key = STREAM[0].replace('"key": {"k": "a"}', '"key": {"id": "a"}')
    wrong_row = STREAM[0].replace('"n": 1', '"m": 1')
    for first in (wrong_key, wrong_row):
        res = kv("apply", "items", input="\n".join([first, *STREAM[1:]]))
        assert_one_error(res, 2)
        assert "line 1:" in res.err and "columns" in res.err
    assert _rows(dst) == {}
    assert_one_error(Kvctl(dst)("apply", "missing", input=STREAM[0]), 1)


def _kvctl(*args: str) -> list[str]:
    return [sys.executable, "-m", "kvctl", *args]


@pytest.mark.parametrize("kind", ["rocksdb", "postgres"])
def test_a_live_replica_through_a_pipe(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """kvctl watch A --since 0 --count N | kvctl apply B, from a RocksDB store into another provider."""
    src = f"rocksdb://{tmp_path / 'src'}"
    other = provider_url(kind, tmp_path / "other", request)
    source_spec = spi.TableSpec("a", ITEMS.fields, ITEMS.primary_key, changes=True, ttl=3600)
    with spi.connect(src) as p, spi.connect(other) as q:
        p.admin.create(source_spec)
        q.admin.create(spi.TableSpec("b", ITEMS.fields, ITEMS.primary_key))
        t = p.table("a")
        row = {"at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "b": b"\x00"}
        t.load({"k": f"k{i}", "n": i, **row} for i in range(50))  # one revision of 50 events
        with p.transaction() as tx:
            tx.table("a").increment(("k1",), "n", 5)
            tx.table("a").delete(("k2",))
        t.upsert({"k": "k3", "n": -1, **row}, ttl=10_000)
        t.upsert({"k": "k4", "n": -1, **row})
        t.delete(("k4",))
        events = sum(1 for _ in p.changes("a"))
    env = {"PYTHONPATH": str(REPO)}
    watch = subprocess.Popen(
        _kvctl("--url", src, "watch", "a", "--since", "0", "--count", str(events)), stdout=subprocess.PIPE, env=env
    )
    apply = subprocess.run(_kvctl("--url", other, "apply", "b"), stdin=watch.stdout, capture_output=True, env=env)
    assert watch.wait(60) == 0 and apply.returncode == 0, apply.stderr
    assert apply.stdout == b"5\n"
    with spi.connect(src) as p, spi.connect(other) as q:
        want = [(r.to_dict(), r.version, r.expires_at) for r in p.table("a").scan()]
        assert [(r.to_dict(), r.version, r.expires_at) for r in q.table("b").scan()] == want
        assert applied.position(q, "b", "a") == p.revision()
