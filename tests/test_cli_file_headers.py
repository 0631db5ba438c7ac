"""Any file header (CLI.md "Everyday edges"): ``table create --from`` and ``put --file``
name the columns of a CSV/TSV header that is not made of column names by the one rule
of :mod:`kvctl.headers`, and list each renamed header on stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, provider_url

from kvctl.headers import column_names, renamed

HEADERS = [
    "wine id",
    "alcohol",
    "malic_acid",
    "od280/od315_of_diluted_wines",
    "color intensity",
    "1st",
    "Hue",
    "hue",
    "ash",
    "ash",
    "%",
    "",
]
COLUMNS = [
    "wine_id",
    "alcohol",
    "malic_acid",
    "od280_od315_of_diluted_wines",
    "color_intensity",
    "_1st",
    "Hue",
    "hue",
    "ash",
    "ash_2",
    "column_11",
    "column_12",
]
ROWS = [
    ["1", "14.23", "1.71", "3.92", "5.64", "x", "1.04", "1.05", "2.43", "2.5", "a", "b"],
    ["2", "13.2", "1.78", "3.4", "4.38", "y", "1.05", "1.06", "2.14", "2.2", "c", "d"],
]
RENAME_LINES = [
    "renamed header 'wine id' -> wine_id",
    "renamed header 'od280/od315_of_diluted_wines' -> od280_od315_of_diluted_wines",
    "renamed header 'color intensity' -> color_intensity",
    "renamed header '1st' -> _1st",
    "renamed header 'ash' -> ash_2",
    "renamed header '%' -> column_11",
    "renamed header '' -> column_12",
]


@pytest.fixture
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    """kvctl on a fresh RocksDB store."""
    return Kvctl(provider_url("rocksdb", tmp_path, request))


def _write(path: Path, delimiter: str, header: list[str], rows: list[list[str]]) -> Path:
    path.write_text("\n".join(delimiter.join(fields) for fields in [header, *rows]) + "\n")
    return path


def _scan(kv: Kvctl) -> list[dict[str, Any]]:
    return json.loads(kv.ok("scan", "wine", "-o", "json").out)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("headers", "names"),
    [
        (HEADERS, COLUMNS),
        (["x", "x", "x_2", "x"], ["x", "x_2", "x_2_2", "x_3"]),
        (["a b", "a_b", "_id", "--", "9 lives!", "é"], ["a_b", "a_b_2", "_id", "column_4", "_9_lives", "column_6"]),
    ],
)
def test_column_names(headers: list[str], names: list[str]) -> None:
    assert column_names(headers) == names
    assert renamed(headers) == [(h, n) for h, n in zip(headers, names) if h != n]


@pytest.mark.parametrize(("suffix", "delimiter"), [("csv", ","), ("tsv", "\t")])
def test_create_from_then_put_file_of_the_same_file(kv: Kvctl, tmp_path: Path, suffix: str, delimiter: str) -> None:
    path = _write(tmp_path / f"wine.{suffix}", delimiter, HEADERS, ROWS)
    created = kv.ok("table", "create", "wine", "--from", str(path), "--pk", "wine_id", "--index", "color_intensity")
    assert created.err.splitlines() == [*RENAME_LINES, "created table 'wine'"]
    spec = json.loads(created.out)
    assert [f["name"] for f in spec["fields"]] == COLUMNS
    assert spec["primary_key"] == ["wine_id"]
    assert spec["indexes"] == ["color_intensity"]

    put = kv.ok("put", "wine", "--file", str(path))
    assert [line for line in put.err.splitlines() if line.startswith("renamed ")] == RENAME_LINES
    rows = _scan(kv)
    assert [row["wine_id"] for row in rows] == [1, 2]
    assert rows[0]["od280_od315_of_diluted_wines"] == 3.92
    assert rows[0]["color_intensity"] == 5.64
    assert (rows[0]["Hue"], rows[0]["hue"]) == (1.04, 1.05)
    assert (rows[1]["ash"], rows[1]["ash_2"]) == (2.14, 2.2)
    assert (rows[1]["_1st"], rows[1]["column_11"], rows[1]["column_12"]) == ("y", "c", "d")


def test_headers_of_column_names_print_nothing(kv: Kvctl, tmp_path: Path) -> None:
    path = _write(tmp_path / "wine.csv", ",", COLUMNS, ROWS)
    created = kv.ok("table", "create", "wine", "--from", str(path), "--pk", "wine_id")
    assert created.err.splitlines() == ["created table 'wine'"]
    put = kv.ok("put", "wine", "--file", str(path))
    assert "renamed" not in put.err
    assert len(_scan(kv)) == 2


def test_pk_takes_the_new_name(kv: Kvctl, tmp_path: Path) -> None:
    path = _write(tmp_path / "wine.csv", ",", HEADERS, ROWS)
    res = kv("table", "create", "wine", "--from", str(path), "--pk", "wine id")
    assert res.code == 2
    assert res.err.splitlines()[:-1] == RENAME_LINES
    assert res.err.splitlines()[-1] == (
        f"error: {path} line 1: --pk names 'wine id', not a column (columns: {', '.join(COLUMNS)})"
    )


def test_a_renamed_header_the_table_lacks_is_named_as_renamed(kv: Kvctl, tmp_path: Path) -> None:
    kv.ok("table", "create", "wine", "--field", "wine_id:long", "--field", "alcohol:double", "--pk", "wine_id")
    path = _write(tmp_path / "wine.csv", ",", ["wine id", "color intensity"], [["1", "5.64"]])
    res = kv("put", "wine", "--file", str(path))
    assert res.err.splitlines()[:2] == [
        "renamed header 'wine id' -> wine_id",
        "renamed header 'color intensity' -> color_intensity",
    ]
    assert res.code == 2
    assert res.err.splitlines()[-1].startswith(f"error: {path} line 1, column 'color_intensity': unknown column")


def test_a_duplicate_header_loads_into_its_suffixed_column(kv: Kvctl, tmp_path: Path) -> None:
    kv.ok(
        "table",
        "create",
        "wine",
        "--field",
        "id:long",
        "--field",
        "ash:double",
        "--field",
        "ash_2:double",
        "--pk",
        "id",
    )
    path = _write(tmp_path / "wine.tsv", "\t", ["id", "ash", "ash"], [["1", "2.43", "2.5"]])
    put = kv.ok("put", "wine", "--file", str(path))
    assert [line for line in put.err.splitlines() if line.startswith("renamed ")] == ["renamed header 'ash' -> ash_2"]
    assert [(r["ash"], r["ash_2"]) for r in _scan(kv)] == [(2.43, 2.5)]
