"""Bad input exits 2 with one plain ``error:`` line, never an internal error (issue 39):
JSON nested too deeply or holding a number too long to convert, durations and numbers
out of range, ``--where`` clauses too deep or too big, CSV/TSV fields up to the value
limit; then the input readers, ``txn``, ``apply`` and ``--where`` fuzzed with random
and adversarial text through the in-process CLI."""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, Result, assert_one_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DEEP = "[" * 100_000
LONG_INT = "1" * 5000


@pytest.fixture(scope="module")
def kv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kvctl]:
    """A RocksDB store with ``t`` (every type, an index, a change feed)."""
    kv = Kvctl(f"rocksdb://{tmp_path_factory.mktemp('bad') / 'db'}")
    kv.ok(
        "table", "create", "t", "--field", "id:long", "--field", "v:string", "--field", "n:double",
        "--field", "b:bytes", "--field", "ts:timestamp", "--field", "i:int", "--pk", "id", "--index", "v",
        "--changes",
    )  # fmt: skip
    kv.ok("put", "t", '{"id": 1, "v": "x", "n": 1.5, "i": 3}')
    yield kv


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _change(**fields: Any) -> str:
    line = {"revision": 1, "table": "t", "op": "put", "key": {"id": 5}, "row": {"id": 5, "v": "y"}, **fields}
    return json.dumps(line) + "\n"


def bad_json_cases(tmp_path: Path) -> list[tuple[list[str], str | None]]:
    """Commands given deeply nested JSON, or a number of 5000 digits, every way JSON comes in."""
    cases: list[tuple[list[str], str | None]] = []
    for bad in (DEEP, '{"id": ' + DEEP, LONG_INT, '{"id": ' + LONG_INT + "}"):
        cases += [
            (["put", "t", "--file", _file(tmp_path, "a.json", f"[{bad}]")], None),
            (["put", "t", "--file", _file(tmp_path, "a.ndjson", bad + "\n")], None),
            (["put", "t", "--file", "-"], f"[{bad}]"),
            (["put", "t", "--file", "-"], bad if bad.startswith("{") else '{"id": ' + bad + "}"),
            (["put", "t", bad], None),
            (["update", "t", "id=1", "--set", "v=y", "--default", bad], None),
            (["txn", "--file", "-"], '{"ops": [' + bad + "]}"),
            (["apply", "t"], bad + "\n"),
            (["table", "create", "u", "--spec", _file(tmp_path, "s.json", bad)], None),
        ]
    return cases


def test_bad_json_exits_2(kv: Kvctl, tmp_path: Path) -> None:
    for args, stdin in bad_json_cases(tmp_path):
        res = kv(*args, input=stdin)
        assert_one_error(res, 2)
        assert "nested too deeply" in res.err or "more than 4300 digits" in res.err or "out of range" in res.err, (
            args,
            res.err,
        )


def test_numbers_too_long_for_any_column_exit_2(kv: Kvctl, tmp_path: Path) -> None:
    for args in (
        ["get", "t", f"id={LONG_INT}"],
        ["scan", "t", "--ge", f"id={LONG_INT}"],
        ["scan", "t", "--where", f"id > {LONG_INT}"],
        ["put", "t", "--file", _file(tmp_path, "a.csv", f"id,v\n{LONG_INT},x\n")],
        ["put", "t", "--file", _file(tmp_path, "b.csv", f"id,v\n{LONG_INT}.0,x\n")],
        ["update", "t", "id=1", "--set", f"i={LONG_INT}"],
    ):
        res = kv(*args)
        assert_one_error(res, 2)
        assert len(res.err) < 300, res.err  # the value is shown cut short


@pytest.mark.parametrize(
    "args",
    [
        ["put", "t", '{"id": 2}', "--ttl", "99999999999d"],
        ["put", "t", '{"id": 2}', "--ttl", "36501d"],
        ["table", "create", "u", "--field", "id:long", "--pk", "id", "--ttl", "99999999999d"],
        ["table", "alter", "t", "--ttl", "1000000000000"],
        ["changes", "t", "--since", "99999999999999999999999"],
        ["changes", "t", "--since", "9223372036854775808"],
        ["changes", "t", "--before", "99999999999999999999999", "--yes"],
        ["watch", "t", "--since", "99999999999999999999999"],
        ["watch", "t", "--timeout", "99999999999d"],
        ["watch", "t", "--progress", "99999999999d", "--timeout", "0"],
        ["get", "t", "id=1", "--watch", "--timeout", "1e300"],
        ["put", "t", "--file", "-", "--batch-size", "99999999999999999999999"],
        ["copy", "memory://", "memory://x", "--all", "--batch-size", "9223372036854775808"],
    ],
)
def test_durations_and_numbers_out_of_range_exit_2(kv: Kvctl, args: list[str]) -> None:
    res = kv(*args, input='{"id": 2}\n')
    assert_one_error(res, 2)
    assert "internal" not in res.err and "unexpected" not in res.err


def test_the_ttl_limit_is_100_years(kv: Kvctl) -> None:
    kv.ok("put", "t", '{"id": 3}', "--ttl", "36500d")
    assert kv.ok("get", "t", "id=3", "-o", "json").out


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("not " * 100_000 + "v = 'x'", "nested too deeply"),
        ("(" * 100_000, "too many nested parentheses"),
        (" or ".join(["v = 'x'"] * 20_000), "more than 10000 predicates"),
        (" and ".join(["n > 1"] * 20_000), "more than 10000 predicates"),
        ("'" * 100_001, "unexpected"),
        (f"i = {LONG_INT}", "out of range"),
    ],
)
def test_where_clauses_too_deep_or_too_big_exit_2(kv: Kvctl, where: str, says: str) -> None:
    res = kv("scan", "t", "--where", where)
    assert_one_error(res, 2)
    assert says in res.err and len(res.err) < 300, res.err


def test_a_long_list_of_values_is_one_predicate(kv: Kvctl) -> None:
    where = "id in (" + ", ".join(map(str, range(50_000))) + ")"
    assert kv.ok("count", "t", "--where", where).out.strip() != ""


def test_csv_and_tsv_fields_take_values_up_to_the_limit(tmp_path: Path) -> None:
    kv = Kvctl(f"rocksdb://{tmp_path / 'db'}")
    kv.ok("table", "create", "t", "--field", "id:long", "--field", "v:string", "--field", "b:bytes", "--pk", "id")
    mib = "x" * (1 << 20)
    kv.ok("put", "t", "--file", _file(tmp_path, "big.csv", f"id,v\n1,{mib}\n2,short\n"))
    assert json.loads(kv.ok("get", "t", "id=1", "-o", "json").out)["v"] == mib
    quoted = "a\nb" * (1 << 19)  # a quoted field spanning lines, over 1 MiB
    kv.ok("put", "t", "--file", _file(tmp_path, "q.csv", f'id,v\n3,"{quoted}"\n'))
    assert json.loads(kv.ok("get", "t", "id=3", "-o", "json").out)["v"] == quoted
    ten = "y" * (10 << 20)
    kv.ok("put", "t", "--file", _file(tmp_path, "big.tsv", f"id\tv\n4\t{ten}\n"))
    assert len(json.loads(kv.ok("get", "t", "id=4", "-o", "json").out)["v"]) == len(ten)
    res = kv("put", "t", "--file", _file(tmp_path, "huge.csv", "id,v\n5," + "z" * (23 << 20) + "\n"))
    assert_one_error(res, 2)
    assert "huge.csv line 2" in res.err and "16 MiB" in res.err


# ------------------------------------------------------------------ fuzzing

_UNEXPECTED: list[tuple[list[str], str]] = []
"""Every run that ended as an internal error or a traceback (asserted empty)."""

_json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
_json_values = st.recursive(
    _json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
)
_columns = st.sampled_from(["id", "v", "n", "b", "ts", "i", "zz", ""])
_rows = st.dictionaries(_columns, _json_values, max_size=6)
_adversarial = st.sampled_from(
    [
        DEEP,
        "{" * 5000,
        '{"id": ' + "[" * 3000,
        LONG_INT,
        "1e999999",
        "-" + LONG_INT,
        '"\\ud800"',
        "\x00",
        "\ufeff{}",
        "NaN",
        "[" + ",".join(["{}"] * 100) + "]",
        '{"id": 1, "v": "' + "x" * 70_000 + '"}',
    ]
)
_texts = st.one_of(
    st.text(max_size=200),
    _adversarial,
    _json_values.map(json.dumps),
    _rows.map(json.dumps),
    st.lists(_adversarial | _rows.map(json.dumps), max_size=4).map("\n".join),
)


def _run(kv: Kvctl, args: list[str], stdin: str | None = None) -> Result:
    try:
        res = kv(*args, input=stdin)
    except Exception as exc:  # the runner re-raises what escaped the command
        _UNEXPECTED.append((args, f"{type(exc).__name__}: {exc}"))
        raise
    if res.code == 4 or "internal error" in res.err or "unexpected error" in res.err or "Traceback" in res.err:
        _UNEXPECTED.append((args, res.err))
    assert res.code != 4 and "Traceback" not in res.err, (args[:3], stdin and stdin[:200], res)
    assert "internal error" not in res.err and "unexpected error" not in res.err, (args[:3], res.err)
    return res


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(text=_texts, fmt=st.sampled_from(["json", "ndjson", "csv", "tsv"]))
def test_fuzz_put_file(kv: Kvctl, tmp_path: Path, text: str, fmt: str) -> None:
    path = tmp_path / f"in.{fmt}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _run(kv, ["put", "t", "--file", str(path)])
    _run(kv, ["put", "t", "--file", "-", "--format", fmt], text.encode("utf-8", "replace").decode())


_csv_cells = st.one_of(
    st.text(alphabet=string.printable, max_size=30), st.sampled_from(['"', '""', '"a""b"', "\r", "1.0", "", "null"])
)


@FUZZ
@given(
    header=st.lists(_columns, min_size=1, max_size=5),
    rows=st.lists(st.lists(_csv_cells, max_size=6), max_size=6),
    sep=st.sampled_from([",", "\t"]),
)
def test_fuzz_csv_and_tsv(kv: Kvctl, tmp_path: Path, header: list[str], rows: list[list[str]], sep: str) -> None:
    text = "\n".join(sep.join(line) for line in [header, *rows]) + "\n"
    path = tmp_path / ("in.csv" if sep == "," else "in.tsv")
    path.write_text(text, encoding="utf-8")
    _run(kv, ["put", "t", "--file", str(path)])


@FUZZ
@given(text=_texts)
def test_fuzz_put_row_json(kv: Kvctl, text: str) -> None:
    _run(kv, ["put", "t", text.replace("\x00", "")])  # an argument cannot hold NUL


_ops = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["put", "insert", "delete", "update", "incr", "cas", "get", "bogus"]),
        "table": st.just("t"),
    },
    optional={"key": _rows, "row": _rows, "values": _rows, "column": _columns, "by": _json_values, "if": _rows},
)


@FUZZ
@given(doc=st.one_of(_texts, st.lists(_ops, max_size=4).map(lambda ops: json.dumps({"ops": ops}))))
def test_fuzz_txn(kv: Kvctl, doc: str) -> None:
    _run(kv, ["txn", "--file", "-"], doc)


_events = st.fixed_dictionaries(
    {
        "revision": st.integers(min_value=-1, max_value=2**70) | _json_values,
        "table": st.just("t") | st.text(max_size=3),
        "op": st.sampled_from(["put", "delete", "expire", "x"]),
        "key": _rows,
    },
    optional={"row": _rows, "version": _json_values, "expires": _json_values, "progress": _json_values},
)


@FUZZ
@given(lines=st.lists(st.one_of(_events.map(json.dumps), _texts), max_size=5))
def test_fuzz_apply(kv: Kvctl, lines: list[str]) -> None:
    _run(kv, ["apply", "t", "--source", "fuzz"], "\n".join(lines) + "\n")


_where_words = st.sampled_from(
    ["id", "v", "n", "b", "ts", "i", "zz", "and", "or", "not", "in", "like", "between", "is", "null", "true",
     "(", ")", ",", "=", "<>", "!=", "<", ">=", "'x'", "''", "'2024-01-01'", "'b64:AA=='", "1", "-1.5e3",
     LONG_INT, "1e999", "'", "\x00", "%", "--"]
)  # fmt: skip


@FUZZ
@given(where=st.one_of(st.lists(_where_words, max_size=12).map(" ".join), st.text(max_size=60), _adversarial))
def test_fuzz_where(kv: Kvctl, where: str) -> None:
    _run(kv, ["scan", "t", "--where", where.replace("\x00", " ")])
    _run(kv, ["count", "t", "--where", where.replace("\x00", " ")])


def test_no_fuzzed_run_was_unexpected() -> None:
    """Run last in this module: the tally of every fuzzed run above."""
    assert _UNEXPECTED == []
