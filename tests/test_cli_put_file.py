"""``put --file`` through the columnar reader (issue 23): CSV/TSV typed column by
column in C must give exactly the values and errors of the row-by-row reference
(:func:`spi.textvalues.parse_field`), errors must name the line a record starts on
wherever it lies in the file, and complete rows reach the load as
:class:`spi.validated.ValidatedRows`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from cli_support import ORDERS_FIELDS, PROVIDER_KINDS, Kvctl, assert_one_error, provider_url
from hypothesis import given, settings
from hypothesis import strategies as st

import spi
from spi.arrow import arrow_columns
from spi.testing.requirements import need_module
from spi.textvalues import from_json_value, parse_field

pa = need_module("pyarrow")
columnar = need_module("kvctl.columnar")

SPEC = spi.TableSpec(
    "t",
    [
        spi.Field("k", "string"),
        spi.Field("i", "int"),
        spi.Field("l", "long"),
        spi.Field("f", "float"),
        spi.Field("d", "double"),
        spi.Field("b", "bool"),
        spi.Field("ts", "timestamp"),
        spi.Field("raw", "bytes"),
        spi.Field("s", "string"),
        spi.Field("ki", "long"),
    ],
    ["k", "ki"],
)
ODD_TEXTS = {
    "i": ["", "0", "-0", "+7", " 7 ", "1_000", "433.0", "433.5", "2147483647", "2147483648", "999999999", "null", "x"],
    "l": ["9223372036854775807", "9223372036854775808", "-9223372036854775808", "123456789012345678", "1e3", "NA"],
    "f": ["1.5", "-0.0", "3.4028235e38", "3.5e38", "1e39", "nan", "inf", "-Infinity", ".5", "1.", "0.1", " 2 ", ""],
    "d": ["1e308", "1e309", "-0", "1_0.5", "+.5e-3", "0x10", "1.7976931348623157e308", "NaN", "null", "4.9e-324"],
    "b": ["true", "FALSE", "True", "yes", "1", "", "null", "tRuE", " true"],
    "ts": [
        "2024-05-01",
        "2024-05-01T12:00:00Z",
        "2024-05-01 12:00:00+05:30",
        "2024-05-01T12:00",
        "2023-02-29",
        "2024-05-01T24:00:00Z",
        "2024-05-01T23:59:60Z",
        "0001-01-01T00:30:00+01:00",
        "9999-12-31T23:59:59.999999Z",
        "2024-05-01T12:00:00.1234567Z",
        "2024-05-01t12:00:00z",
        "20240501",
        "2024-05-01T12",
        " 2024-05-01",
        "",
    ],
    "raw": ["aGk=", "aGk", "!!", "", "null"],
    "s": ["", "null", "a\x00b", "é", "x" * 2000],
    "k": ["", "a", "x" * 1025, "é" * 600],
    "ki": ["", "1", "1.0", "-5"],
}


def reference(column: str, text: str) -> tuple[str, Any]:
    """``parse_field``'s verdict: ("ok", value) or ("error", None)."""
    try:
        return "ok", parse_field(SPEC, column, text)
    except spi.KvError:
        return "error", None


def columnar_verdicts(column: str, texts: list[str]) -> list[tuple[str, Any]]:
    """The columnar reader's verdict on each text (one at a time, so every error shows)."""
    out = []
    for text in texts:
        typed, bad = columnar.typed_column(SPEC, column, pa.array([text], pa.string()))
        if bad is not None:
            out.append(("error", None))
        else:
            (value,) = arrow_columns(pa.record_batch([typed], names=[column]))[0]
            out.append(("ok", value))
    return out


def same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    if a[0] != b[0]:
        return False
    x, y = a[1], b[1]
    if isinstance(x, float) and math.isnan(x):
        return isinstance(y, float) and math.isnan(y)
    return type(x) is type(y) and x == y and (not isinstance(x, float) or math.copysign(1, x) == math.copysign(1, y))


@pytest.mark.parametrize("column", list(ODD_TEXTS))
def test_each_text_is_typed_as_parse_field_types_it(column: str) -> None:
    texts = ODD_TEXTS[column]
    for text, got in zip(texts, columnar_verdicts(column, texts)):
        assert same(got, reference(column, text)), (column, text, got, reference(column, text))


def test_a_column_of_mixed_forms_keeps_every_value_in_place() -> None:
    texts = ["1", "433.0", "", " 7 ", "-12", "+3"]
    typed, bad = columnar.typed_column(SPEC, "i", pa.array(texts))
    assert bad is None
    assert typed.to_pylist() == [1, 433, None, 7, -12, 3]
    _, bad = columnar.typed_column(SPEC, "i", pa.array(["1", "2", "x", "y"]))
    assert bad == 2


NUMBERISH = st.text(alphabet="0123456789+-.eE _xn", max_size=12)
TIMEISH = st.from_regex(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,7})?)?)?(Z|[+-][0-9]{2}:[0-9]{2})?",
    fullmatch=True,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["i", "l", "f", "d"]), st.lists(NUMBERISH, min_size=1, max_size=8))
def test_numbers_match_the_reference(column: str, texts: list[str]) -> None:
    for text, got in zip(texts, columnar_verdicts(column, texts)):
        assert same(got, reference(column, text)), (column, text, got)


@settings(max_examples=200, deadline=None)
@given(st.lists(TIMEISH, min_size=1, max_size=5))
def test_timestamps_match_the_reference(texts: list[str]) -> None:
    for text, got in zip(texts, columnar_verdicts("ts", texts)):
        assert same(got, reference("ts", text)), (text, got)


JSON_VALUES: list[Any] = [
    None, True, False, 0, -1, 7, 2**31 - 1, 2**31, 2**53 + 1, 2**63, -(2**63), 1.0, 433.0, 1.5, -0.0, 1e39, 3.4e38,
    float("nan"), float("inf"), "", "x", "null", "2024-05-01", "2024-05-01T12:00:00Z", "2024-05-01 12:00:00+05:30",
    "2023-02-29", "aGk=", "!!", "a\x00b", "\ud800", "é" * 600, [1], {"a": 1},
]  # fmt: skip


def json_reference(column: str, value: Any) -> tuple[str, Any]:
    try:
        return "ok", from_json_value(SPEC, column, value)
    except spi.KvError:
        return "error", None


@pytest.mark.parametrize("column", [f.name for f in SPEC.fields])
def test_each_json_value_is_typed_as_from_json_value_types_it(column: str) -> None:
    for value in JSON_VALUES:
        typed, bad = columnar.json_column(SPEC, column, [value])
        got = ("error", None) if bad is not None else ("ok", arrow_columns(pa.record_batch([typed], [column]))[0][0])
        assert same(got, json_reference(column, value)), (column, value, got)
    # a column of mixed values: each in place, the first bad one found
    typed, bad = columnar.json_column(SPEC, "d", [1, 2.5, None, 2**53 + 1, -0.0])
    assert bad is None and typed.to_pylist() == [1.0, 2.5, None, float(2**53 + 1), 0.0]
    assert columnar.json_column(SPEC, "i", [1, 2, 1.5, "x"])[1] == 2


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok("table", "create", "orders", *ORDERS_FIELDS)
    return runner


def scan(kv: Kvctl) -> dict[tuple[str, int], dict[str, Any]]:
    return {
        (r["region"], r["id"]): r for r in map(json.loads, kv.ok("scan", "orders", "--all", "-o", "ndjson").lines())
    }


def big_csv(n: int, bad_at: int | None = None) -> str:
    """A CSV of ``n`` rows, some spanning two lines, over several parse blocks; row
    ``bad_at`` (0-based) has a bad total."""
    lines = ["region,id,status,total,ts"]
    for i in range(n):
        status = f'"two\nlines {i}"' if i % 7 == 0 else f"s{i % 5}"
        total = "abc" if i == bad_at else f"{i}.5"
        lines.append(f"r{i % 3},{i},{status},{total},2024-05-01T00:00:{i % 60:02d}Z")
    return "\n".join(lines) + "\n"


def line_of_row(text: str, index: int) -> int:
    import csv
    import io

    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader)
    start = reader.line_num + 1
    for i, _ in enumerate(reader):
        if i == index:
            return start
        start = reader.line_num + 1
    raise AssertionError(index)


def test_a_big_file_loads_and_a_bad_value_deep_in_it_names_its_line(kv: Kvctl, tmp_path: Path) -> None:
    n = 60_000  # about 3 MB: several of the reader's 1 MB blocks
    bad = big_csv(n, bad_at=n - 100)
    (tmp_path / "bad.csv").write_text(bad)
    res = kv("put", "orders", "--file", str(tmp_path / "bad.csv"))
    assert_one_error(res, 2)
    assert f"bad.csv line {line_of_row(bad, n - 100)}, column 'total'" in res.err
    assert kv.ok("count", "orders").out == "0\n"
    good = big_csv(n)
    assert kv.ok("put", "orders", "--file", "-", "--format", "csv", input=good).out == f"{n}\n"
    rows = scan(kv)
    assert len(rows) == n
    assert rows[("r1", 7)]["status"] == "two\nlines 7" and rows[("r2", 59_999)]["total"] == 59_999.5
    assert rows[("r1", 61)]["ts"] == "2024-05-01T00:00:01+00:00"


def test_partial_rows_merge_and_odd_files_behave_as_before(kv: Kvctl, tmp_path: Path) -> None:
    kv.ok("put", "orders", '{"region": "eu", "id": 1, "status": "keep", "total": 1}')
    (tmp_path / "p.tsv").write_text("\ufeffregion\tid\ttotal\neu\t1\t2.5\neu\t2\t\n")
    assert kv.ok("put", "orders", "--file", str(tmp_path / "p.tsv")).out == "2\n"
    rows = scan(kv)
    assert rows[("eu", 1)]["status"] == "keep" and rows[("eu", 1)]["total"] == 2.5
    assert rows[("eu", 2)]["total"] is None
    for name, text in [("empty.csv", ""), ("header.csv", "region,id\n")]:
        (tmp_path / name).write_text(text)
        assert kv.ok("put", "orders", "--file", str(tmp_path / name)).out == "0\n"
    (tmp_path / "latin.csv").write_bytes(b"region,id,status\neu,3,caf\xe9\n")
    res = kv("put", "orders", "--file", str(tmp_path / "latin.csv"))
    assert_one_error(res, 2)
    assert "is not UTF-8 text" in res.err
    (tmp_path / "short.csv").write_text("region,id,status\neu,3,a\n\neu,4\n")
    res = kv("put", "orders", "--file", str(tmp_path / "short.csv"))
    assert_one_error(res, 2)
    assert "short.csv line 4: has 2 fields; the header has 3" in res.err
    assert set(scan(kv)) == {("eu", 1), ("eu", 2)}


def test_insert_of_a_taken_key_names_its_line(kv: Kvctl, tmp_path: Path) -> None:
    kv.ok("put", "orders", '{"region": "eu", "id": 5}')
    (tmp_path / "a.csv").write_text('region,id,status\neu,4,"x\ny"\neu,5,z\n')
    res = kv("put", "orders", "--file", str(tmp_path / "a.csv"), "--mode", "insert", "--batch-size", "1")
    assert_one_error(res, 1)
    assert "a.csv line 4: " in res.err and "region=eu id=5" in res.err and "; 1 of 2 rows written; " in res.err
    (tmp_path / "b.csv").write_text("region,id,status,total,data,ts\nus,1,a,,,\nus,2,b,,,\nus,1,c,,,\n")
    res = kv("put", "orders", "--file", str(tmp_path / "b.csv"), "--mode", "insert")
    assert_one_error(res, 1)
    assert (
        "b.csv line 4: " in res.err and "region=us id=1 appears twice" in res.err and "; nothing was written" in res.err
    )


def test_validated_rows_are_validated_again_for_another_spec() -> None:
    from spi.validated import ValidatedRows

    provider = spi.connect("memory://")
    provider.admin.create(spi.TableSpec("v", [spi.Field("k", "long"), spi.Field("n", "int")], ["k"]))
    table = provider.table("v")
    same_spec = ValidatedRows(table.spec, [[[1, 2], [10, 20]]])
    assert table.load(same_spec) == 2
    assert [dict(r) for r in table.scan()] == [{"k": 1, "n": 10}, {"k": 2, "n": 20}]
    other = spi.TableSpec("v", [spi.Field("k", "long"), spi.Field("n", "long")], ["k"])
    with pytest.raises(spi.InvalidFieldError) as caught:
        table.load(ValidatedRows(other, [[[3, 4], [1, 2**40]]]))
    assert caught.value.row_index == 1 and caught.value.rows_written == 0
    provider.close()


@pytest.mark.parametrize("url", ["memory://", "rocksdb"])
@pytest.mark.parametrize("batch_size", [1, 3, 7, 100])
def test_validated_columns_load_whatever_their_batches_lengths(tmp_path: Path, url: str, batch_size: int) -> None:
    """Column batches of uneven lengths (what a file's blocks give) load as the rows
    they hold, taken ``batch_size`` at a time across the batches' edges; an insert of
    a key twice names the row, counted across batches."""
    from spi.validated import ValidatedRows

    spec = spi.TableSpec("v", [spi.Field("k", "long"), spi.Field("s", "string")], ["k"], indexes=["s"])
    batches = [[[0, 1, 2], ["a", "b", "c"]], [[3], ["d"]], [[], []], [[4, 5, 6, 7, 8], ["e", "f", "g", "h", "i"]]]
    with spi.connect(url if url != "rocksdb" else f"rocksdb://{tmp_path}/db") as provider:
        provider.admin.create(spec)
        table = provider.table("v")
        assert table.load(ValidatedRows(spec, batches), batch_size=batch_size) == 9
        assert [(r["k"], r["s"]) for r in table.scan()] == [(i, "abcdefghi"[i]) for i in range(9)]
        assert [r["k"] for r in table.scan(order_by="s")] == list(range(9))
        with pytest.raises(spi.RowExistsError) as caught:
            table.load(ValidatedRows(spec, [[[9], ["j"]], [[10, 9], ["k", "l"]]]), mode="insert", batch_size=batch_size)
        assert caught.value.row_index == 2


def test_json_files_keep_every_contract_point(kv: Kvctl, tmp_path: Path) -> None:
    rows = [
        {"region": "eu", "id": i, "status": f"s{i}", "total": i / 2, "ts": "2024-05-01T00:00:00Z"}
        for i in range(25_000)
    ]
    (tmp_path / "a.ndjson").write_text("\n".join(map(json.dumps, rows)) + "\n")
    assert kv.ok("put", "orders", "--file", str(tmp_path / "a.ndjson")).out == "25000\n"
    got = scan(kv)
    assert got[("eu", 24_999)]["total"] == 12_499.5 and got[("eu", 3)]["ts"] == "2024-05-01T00:00:00+00:00"
    # records that set different columns keep their own (a partial upsert leaves the rest)
    (tmp_path / "b.json").write_text('[{"region": "eu", "id": 1, "total": 9},\n {"region": "eu", "id": 2}]')
    assert kv.ok("put", "orders", "--file", str(tmp_path / "b.json")).out == "2\n"
    got = scan(kv)
    assert (got[("eu", 1)]["total"], got[("eu", 1)]["status"]) == (9.0, "s1") and got[("eu", 2)]["status"] == "s2"
    # a bad value in the third chunk names its line; a bad value comes before a later syntax error
    bad = [*rows[:22_000], {**rows[22_000], "total": "x"}, *rows[22_001:]]
    (tmp_path / "c.ndjson").write_text("\n".join(map(json.dumps, bad)) + "\n")
    res = kv("put", "orders", "--file", str(tmp_path / "c.ndjson"))
    assert_one_error(res, 2)
    assert "c.ndjson line 22001, column 'total'" in res.err
    (tmp_path / "d.ndjson").write_text('{"region": "us", "id": 1, "total": true}\n{"region": \n')
    res = kv("put", "orders", "--file", str(tmp_path / "d.ndjson"))
    assert_one_error(res, 2)
    assert "d.ndjson line 1, column 'total'" in res.err
    res = kv("put", "orders", "--file", "-", input='[{"region": "us", "id": 1}, {"region": "us", "id": null}]')
    assert_one_error(res, 2)
    assert "stdin line 1, column 'id'" in res.err
    assert ("us", 1) not in scan(kv)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"region": "eu", "id": 1, "total": 1}\r\n\r\n{"region": "eu", "id": 2}\r\n', 2),  # CRLF
        ('\ufeff{"region": "eu", "id": 1, "total": NaN}\n{"region": "eu", "id": 2, "total": 1e400}', 2),
        ('{"region": "eu",\r"id": 1}\n', "line 1: invalid JSON"),  # the reference splits lines at a lone CR
        ('{"region": "eu", "id": 1}\n{"region": "eu", "id": 2, "nope": 1}\n', "line 2, column 'nope'"),
        ('{"region": "eu", "id": 1}\n[1]\n', "line 2: expected a JSON object"),
    ],
)
def test_ndjson_that_msgspec_takes_otherwise_goes_to_the_reference(kv: Kvctl, text: str, expected: Any) -> None:
    res = kv("put", "orders", "--file", "-", input=text)
    if isinstance(expected, int):
        assert res.code == 0 and res.out == f"{expected}\n", res
        return
    assert_one_error(res, 2)
    assert f"stdin {expected}" in res.err
    assert scan(kv) == {}
