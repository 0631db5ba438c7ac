"""Loading real files with ``put --file``: ``--null``, ``--delimiter``, ``--encoding``
and keys repeated in one input (CLI.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import PROVIDER_KINDS, Kvctl, assert_one_error, provider_url

FIELDS = ["--field", "k:string", "--field", "n:long", "--field", "x:double", "--field", "s:string", "--pk", "k"]


@pytest.fixture(params=PROVIDER_KINDS)
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh store with an empty table ``t``."""
    runner = Kvctl(provider_url(request.param, tmp_path, request))
    runner.ok("table", "create", "t", *FIELDS)
    return runner


def rows(kv: Kvctl) -> list[dict[str, object]]:
    return json.loads(kv.ok("scan", "t", "-o", "json").out)  # type: ignore[no-any-return]


@pytest.mark.parametrize("quoted", [False, True])  # a quote sends the file through the strict csv check first
def test_null_and_delimiter(kv: Kvctl, tmp_path: Path, quoted: bool) -> None:
    path = tmp_path / "in.csv"
    s = '"NA"' if quoted else "NA"
    path.write_text(f"k;n;x;s\na;1;NA;{s}\nb;NA;2.5;hé\n", encoding="utf-8")
    assert kv.ok("put", "t", "--file", str(path), "--delimiter", ";", "--null", "NA").out.strip() == "2"
    assert rows(kv) == [{"k": "a", "n": 1, "x": None, "s": None}, {"k": "b", "n": None, "x": 2.5, "s": "hé"}]


def test_na_is_text_without_null(kv: Kvctl, tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("k,s\na,NA\n", encoding="utf-8")
    kv.ok("put", "t", "--file", str(path))
    assert rows(kv) == [{"k": "a", "n": None, "x": None, "s": "NA"}]
    path.write_text("k,n\na,NA\n", encoding="utf-8")
    assert_one_error(kv("put", "t", "--file", str(path)), 2)  # NA is no long


def test_null_in_a_key_column_names_line_and_column(kv: Kvctl, tmp_path: Path) -> None:
    path = tmp_path / "in.tsv"
    path.write_text("k\tn\nok\t1\nNA\t2\n", encoding="utf-8")
    res = kv("put", "t", "--file", str(path), "--null", "NA")
    assert_one_error(res, 2)
    assert "line 3" in res.err and "'k'" in res.err
    assert rows(kv) == []


def test_encoding(kv: Kvctl, tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes("k,s\nc,café\n".encode("latin-1"))
    res = kv("put", "t", "--file", str(path))
    assert_one_error(res, 2)
    assert "UTF-8" in res.err
    assert kv.ok("put", "t", "--file", str(path), "--encoding", "latin-1").out.strip() == "1"
    assert rows(kv)[0]["s"] == "café"
    wide = tmp_path / "wide.csv"
    wide.write_bytes("k,s\nd,żółw\n".encode("utf-16"))
    assert kv.ok("put", "t", "--file", str(wide), "--encoding", "utf-16").out.strip() == "1"
    assert_one_error(kv("put", "t", "--file", str(path), "--encoding", "no-such-codec"), 2)


def test_options_apply_to_csv_files(kv: Kvctl, tmp_path: Path) -> None:
    path = tmp_path / "in.ndjson"
    path.write_text('{"k": "a"}\n', encoding="utf-8")
    assert_one_error(kv("put", "t", "--file", str(path), "--null", "NA"), 2)
    assert_one_error(kv("put", "t", '{"k": "a"}', "--delimiter", ";"), 2)
    assert_one_error(kv("put", "t", "--file", str(path), "--delimiter", ";;"), 2)


@pytest.mark.parametrize("suffix", [".csv", ".ndjson"])
def test_repeated_keys_are_reported(kv: Kvctl, tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"in{suffix}"
    keys = ["a", "b", "a", "c", "b", "a"]
    if suffix == ".csv":
        path.write_text("k,n\n" + "".join(f"{k},{i}\n" for i, k in enumerate(keys)), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps({"k": k, "n": i}) + "\n" for i, k in enumerate(keys)), encoding="utf-8")
    res = kv.ok("put", "t", "--file", str(path))
    assert res.out.strip() == "3"
    assert "6 rows read, 3 distinct keys written (3 replaced an earlier row of the input)" in res.err
    assert {r["k"]: r["n"] for r in rows(kv)} == {"a": 5, "b": 4, "c": 3}  # later rows win
    res = kv.ok("put", "t", "--file", str(path), "--mode", "replace")
    assert res.out.strip() == "3"
    assert "replaced an earlier row" in res.err
    once = tmp_path / "once.csv"
    once.write_text("k,n\nz,1\n", encoding="utf-8")
    res = kv.ok("put", "t", "--file", str(once))
    assert res.out.strip() == "1" and res.err == ""


def test_table_create_from_infers_types(kv: Kvctl, tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text(
        "region,id,total,ok,when,day,odd,empty,big\n"
        "eu,1,2,true,2024-01-01T00:00:00Z,2024-01-01,2012/01/01,,1\n"
        "us,2,2.5,FALSE,2024-01-01 10:00,2024-02-03,x,NA,99999999999999999999\n",
        encoding="utf-8",
    )
    res = kv.ok("table", "create", "o", "--from", str(path), "--pk", "region,id", "--index", "ok", "--null", "NA")
    spec = json.loads(res.out)
    assert spec == {
        "name": "o",
        "fields": [
            {"name": "region", "type": "string"},
            {"name": "id", "type": "long"},
            {"name": "total", "type": "double"},
            {"name": "ok", "type": "bool"},
            {"name": "when", "type": "timestamp"},
            {"name": "day", "type": "timestamp"},
            {"name": "odd", "type": "string"},
            {"name": "empty", "type": "string"},
            {"name": "big", "type": "double"},
        ],
        "primary_key": ["region", "id"],
        "indexes": ["ok"],
    }
    assert json.loads(kv.ok("table", "describe", "o", "-o", "json").out)["fields"] == spec["fields"]
    assert kv.ok("count", "o").out.strip() == "0"  # loads no rows
    assert kv.ok("put", "o", "--file", str(path), "--null", "NA").out.strip() == "2"


def test_table_create_from_json_and_bad_keys(kv: Kvctl, tmp_path: Path) -> None:
    path = tmp_path / "in.ndjson"
    path.write_text('{"a": 1, "b": 1.5, "c": "2024-01-01", "d": true}\n{"a": 2, "b": 2, "c": null}\n', encoding="utf-8")
    spec = json.loads(kv.ok("table", "create", "j", "--from", str(path), "--pk", "a").out)
    assert [f["type"] for f in spec["fields"]] == ["long", "double", "timestamp", "bool"]
    bad = tmp_path / "bad.csv"
    bad.write_text("region,id\neu,1\n,2\n", encoding="utf-8")
    res = kv("table", "create", "b", "--from", str(bad), "--pk", "region,id")
    assert_one_error(res, 2)
    assert "line 3" in res.err and "'region'" in res.err
    assert [t["name"] for t in json.loads(kv.ok("table", "list", "-o", "json").out)] == ["j", "t"]
    assert_one_error(kv("table", "create", "c", "--from", str(bad)), 2)  # no --pk


def test_import_format_from_suffix(kv: Kvctl, tmp_path: Path) -> None:
    res = kv("import", "t", "--in", str(tmp_path / "rows.dat"))
    assert_one_error(res, 2)
    assert "--format parquet|csv|json|orc" in res.err
    assert_one_error(kv("import", "t", "--in", str(tmp_path / "rows.csv"), "--format", "xls"), 2)


def test_repeated_keys_of_a_long_input_are_counted_in_partitions(
    kv: Kvctl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over ``DISTINCT_AT_ONCE`` rows (lowered here from 2,000,000 to 16), the keys are
    counted in hash partitions spilled to temp files: the same count as in memory."""
    import kvctl.bulk

    monkeypatch.setattr(kvctl.bulk, "DISTINCT_AT_ONCE", 16)
    path = tmp_path / "in.csv"
    keys = [f"k{i % 37}" for i in range(200)]
    path.write_text("k,n\n" + "".join(f"{k},{i}\n" for i, k in enumerate(keys)), encoding="utf-8")
    res = kv.ok("put", "t", "--file", str(path))
    assert res.out.strip() == "37"
    assert "200 rows read, 37 distinct keys written (163 replaced an earlier row of the input)" in res.err
    assert len(rows(kv)) == 37
