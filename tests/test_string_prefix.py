"""String prefixes (``like 'SE%'``, ``startswith``) are key or index ranges in every
provider (spi/planner.py, providers/postgres/scan_sql.py), with exactly the rows of a
plain filter; ``scan --prefix`` on a string column that finds nothing says how to
match a prefix of the value."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, provider_url
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spi
from spi import col
from spi.filters import bind, escape_like, like_prefix, string_successor
from spi.keys import ResolvedRange
from spi.planner import plan_scan
from spi.testing.reference.predicates import like

SPEC = spi.TableSpec(
    "p", [spi.Field("s", "string"), spi.Field("n", "long"), spi.Field("t", "string")], ["s", "n"], indexes=["t"]
)
TOP = "\U0010ffff"
ALPHABET = ["S", "E", "F", "a", "%", "_", "\\", "'", TOP, "\ud7ff", "\ue000", "é", "\x7f"]
text = st.lists(st.sampled_from(ALPHABET), max_size=4).map("".join)
patterns = st.one_of(text, text.map(lambda t: t + "%"), text.map(lambda t: escape_like(t) + "%"))


def test_like_prefix_reads_escapes_and_wildcards() -> None:
    cases = {
        "SE%": ("SE", False, True),
        "SE%%": ("SE", False, True),
        "SE": ("SE", True, False),
        "S_E%": ("S", False, False),
        "SE%A": ("SE", False, False),
        "%SE": ("", False, False),
        "%": ("", False, False),
        "": ("", True, False),
        "SE\\%%": ("SE%", False, True),
        "SE\\_%": ("SE_", False, True),
        "SE\\\\%": ("SE\\", False, True),
        "SE\\": ("SE\\", True, False),  # a trailing lone backslash is literal
    }
    for pattern, (prefix, exact, pure) in cases.items():
        assert like_prefix(pattern) == (like_prefix(pattern).__class__(prefix, exact, pure)), pattern


def test_string_successor_at_the_edges() -> None:
    assert string_successor("SE") == "SF"
    assert string_successor("S" + TOP) == "T"
    assert string_successor("S" + TOP + TOP) == "T"
    assert string_successor(TOP) is None and string_successor(TOP * 3) is None and string_successor("") is None
    assert string_successor("a\ud7ff") == "a\ue000"  # the surrogates U+D800..U+DFFF are skipped
    for prefix in ("SE", "S" + TOP, "a\ud7ff", "é"):
        successor = string_successor(prefix)
        assert successor is not None and successor > prefix + TOP * 4
        assert successor.encode() > (prefix + TOP).encode()  # UTF-8 byte order agrees


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(values=st.lists(text, max_size=25), pattern=patterns, column=st.sampled_from(["s", "t"]))
def test_prefix_scans_match_a_plain_filter(values: list[str], pattern: str, column: str) -> None:
    rows = [{"s": v, "n": i, "t": None if i % 5 == 4 else v} for i, v in enumerate(values)]
    where = col(column).like(pattern)
    expected = sorted((r["s"], r["n"]) for r in rows if r[column] is not None and like(r[column], pattern))
    with spi.connect("memory://") as p:
        p.admin.create(SPEC)
        t = p.table("p")
        t.load(rows)
        assert [(r["s"], r["n"]) for r in t.scan(where=where)] == expected
        assert [(r["s"], r["n"]) for r in t.scan(where=where, descending=True)] == expected[::-1]
        assert t.count(where=where) == len(expected)
        assert sorted((r["s"], r["n"]) for r in t.scan(where=where, order_by="t")) == expected
    # The plan reads a range whenever the pattern has a literal prefix, and filters
    # after reading only when the pattern is more than that prefix.
    info = like_prefix(pattern)
    served = info.exact or info.pure
    bound = bind(where, SPEC)
    if column == "s":
        plan = plan_scan(SPEC, ResolvedRange.everything(), bound)
        assert (plan.key_range != ResolvedRange.everything()) == bool(info.prefix or info.exact)
        assert (plan.residual is None) == served
    else:
        ranged = bool(info.prefix or info.exact)
        unordered = plan_scan(SPEC, ResolvedRange.everything(), bound, ordered=False)
        by_t = plan_scan(SPEC, ResolvedRange.everything(), bound, order_by="t")
        assert unordered.index == ("t" if ranged else None) and by_t.index == "t"
        assert (by_t.index_bounds is not None or by_t.index_points is not None) == ranged
        assert (unordered.residual is None) == (by_t.residual is None) == served


AIRPORTS = ["--field", "iata:string", "--field", "name:string", "--field", "n:long", "--pk", "iata", "--index", "name"]


@pytest.fixture(params=["rocksdb", "postgres"])
def airports(request: pytest.FixtureRequest, tmp_path: Path) -> Kvctl:
    kv = Kvctl(provider_url(request.param, tmp_path, request))
    kv.ok("table", "create", "airports", *AIRPORTS)
    rows = [{"iata": f"{a}{b}{c}", "name": f"{c}{b}{a}", "n": i} for i, (a, b, c) in enumerate(
        (a, b, c) for a in "ASZ" for b in "AEZ" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ")]  # fmt: skip
    kv.ok("put", "airports", "--file", "-", "--format", "ndjson", input="\n".join(map(_json, rows)))
    return kv


def _json(row: dict[str, Any]) -> str:
    import json

    return json.dumps(row)


def test_explain_shows_the_key_and_index_range(airports: Kvctl) -> None:
    found = airports.ok("scan", "airports", "--where", "iata like 'SE%'", "--all", "-o", "csv").lines()
    assert len(found) == 27 and all(line.startswith("SE") for line in found[1:])
    plan = airports.ok("scan", "airports", "--where", "iata like 'SE%'", "--explain").out
    by_name = airports.ok("scan", "airports", "--where", "name like 'SE%'", "--order-by", "name", "--explain").out
    partial = airports.ok("scan", "airports", "--where", "iata like 'S_A%'", "--explain").out
    if airports.url.startswith("rocksdb"):
        assert "read primary key of 'airports' in [iata=SE, iata=SF)" in plan
        assert "filter after reading: none" in plan
        assert "read index 'name' of 'airports' for name >= 'SE' and name < 'SF'" in by_name
        assert "filter after reading: none" in by_name
        assert "read primary key of 'airports' in [iata=S, iata=T)" in partial
        assert "filter after reading: iata like 'S_A%'" in partial
    else:
        for text, column in ((plan, "iata"), (by_name, "name")):
            assert f'"{column}" >= ' in text and f'"{column}" < ' in text and "'SE'" in text and "'SF'" in text
            assert "Index Cond" in text and f"{column} >= 'SE'" in text and f"{column} < 'SF'" in text
        assert "'S'" in partial and "'T'" in partial and "LIKE" in partial


def test_an_empty_prefix_on_a_string_column_hints_at_like(airports: Kvctl) -> None:
    res = airports.ok("scan", "airports", "--prefix", "iata=SE")
    assert res.out == ""
    assert res.err.strip() == (
        "hint: --prefix iata=SE matches iata values equal to 'SE' only; "
        "for iata values starting with 'SE' use --where \"iata like 'SE%'\""
    )
    res = airports.ok("count", "airports", "--prefix", "iata=SE", "--where", "n > 40")
    assert res.out.strip() == "0"
    assert "use --where \"(n > 40) and iata like 'SE%'\"" in res.err
    assert "hint:" in airports.ok("scan", "airports", "--prefix", "iata=SE", "--count").err
    # no hint when nothing starts with the value either, nor when rows were found
    assert airports.ok("scan", "airports", "--prefix", "iata=QQ").err == ""
    assert airports.ok("scan", "airports", "--prefix", "iata=SEA").err == ""
    assert airports.ok("scan", "airports", "--prefix", "iata=SE", "--where", "n < 0").err == ""


def test_the_hint_keeps_the_other_prefix_words_and_quotes_for_the_shell(tmp_path: Path) -> None:
    kv = Kvctl(f"rocksdb:{tmp_path / 'db'}")
    kv.ok("table", "create", "t", "--field", "r:string", "--field", "k:string", "--field", "n:long", "--pk", "r,k,n")
    kv.ok("put", "t", '{"r": "eu", "k": "it\'s $x", "n": 1}')
    res = kv.ok("scan", "t", "--prefix", "k=it's", "--prefix", "r=eu")
    assert res.err.startswith('hint: --prefix "k=it\'s" matches k values equal to "it\'s" only;')
    assert res.err.rstrip().endswith("use --prefix r=eu --where \"k like 'it''s%'\"")
    res = kv.ok("scan", "t", "--prefix", "r=eu", "--prefix", "k=it's $")  # $ needs single quotes
    assert res.err.rstrip().endswith("use --prefix r=eu --where " + shlex.quote("k like 'it''s $%'"))
    res = kv.ok("scan", "t", "--prefix", "r=eu", "--prefix", "k=it's $x", "--prefix", "n=2")
    assert res.err == ""  # the deepest prefixed column is a long: whole values are all there is
