"""Filters (spi.col and parse_where) with SQL null semantics, and like."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi import col
from spi.errors import InvalidFieldError
from spi.filters import And, Or, escape_like
from spi.testing.conformance.base import keys, sorted_keys
from spi.testing.fixtures import ORDERS, order_rows
from spi.testing.reference.predicates import like


class FilterTests:
    """Filters (spi.col and parse_where) with SQL null semantics, and like."""

    def test_where(self, provider: Any, orders: Any) -> None:
        rows = order_rows()

        def expect(pred: Callable[[dict[str, Any]], bool]) -> list[tuple[Any, ...]]:
            return sorted_keys([r for r in rows if pred(r)])

        cases: list[tuple[Any, Callable[[dict[str, Any]], bool]]] = [
            (col("status") == "open", lambda r: r["status"] == "open"),
            (col("status") != "open", lambda r: r["status"] is not None and r["status"] != "open"),
            (col("total") < 10, lambda r: r["total"] is not None and r["total"] < 10),
            (col("total") >= 10.5, lambda r: r["total"] is not None and r["total"] >= 10.5),
            (col("id") > 3, lambda r: r["id"] > 3),
            (col("status").isin(["open", "pending", None]), lambda r: r["status"] in ("open", "pending")),
            (col("status").is_null(), lambda r: r["status"] is None),
            (col("note").not_null(), lambda r: r["note"] is not None),
            (col("note").startswith("n1"), lambda r: (r["note"] or "").startswith("n1")),
            (~(col("status") == "open"), lambda r: r["status"] is not None and r["status"] != "open"),
            (
                (col("status") == "open") | (col("total") > 50),
                lambda r: r["status"] == "open" or (r["total"] is not None and r["total"] > 50),
            ),
            (
                (col("status") == "open") & (col("region") == "eu"),
                lambda r: r["status"] == "open" and r["region"] == "eu",
            ),
            (
                col("region").isin(["eu", "ap"]) & (col("id") <= 10),
                lambda r: r["region"] in ("eu", "ap") and r["id"] <= 10,
            ),
            ((col("total") > 0) & (col("total") < 0), lambda r: False),
            (col("total") == None, lambda r: False),  # noqa: E711 - SQL null semantics on purpose
        ]
        for expr, pred in cases:
            assert sorted(keys(orders.scan(where=expr))) == expect(pred), str(expr)
            assert orders.count(where=expr) == len(expect(pred)), str(expr)

    def test_where_type_errors(self, provider: Any, orders: Any) -> None:
        for bad in (
            col("status") == 5,
            col("id") == "x",
            col("nope") == 1,
            col("total").startswith("x"),
            col("id").isin(["a"]),
        ):
            with pytest.raises(InvalidFieldError):
                orders.scan(where=bad)
            with pytest.raises(InvalidFieldError):
                orders.count(where=bad)

    def test_parse_where_matches_builder(self, provider: Any, orders: Any) -> None:
        text = (
            "status = 'open' and (total >= 10.5 or region in ('eu','us')) and note is not null and not note like 'n1%'"
        )
        built = (
            (col("status") == "open")
            & ((col("total") >= 10.5) | col("region").isin(["eu", "us"]))
            & col("note").not_null()
            & ~col("note").like("n1%")
        )
        parsed = spi.parse_where(text, ORDERS)
        assert keys(orders.scan(where=parsed)) == keys(orders.scan(where=built))
        assert keys(orders.scan(where=spi.parse_where("id between -2 and 4 and status <> 'closed'", ORDERS))) == keys(
            orders.scan(where=(col("id") >= -2) & (col("id") <= 4) & (col("status") != "closed"))
        )

    def test_long_and_or_chains(self, provider: Any, orders: Any) -> None:
        """A chain of a thousand parts (what a where-clause joining a thousand
        comparisons with ``and`` parses to) filters as its parts do."""
        ids = [r["id"] for r in order_rows()]
        every = And((*(col("id") != i for i in range(1000, 2000)), col("id") > 3))
        some = Or((*(col("id") == i for i in range(1000, 2000)), col("id") == 4))
        text = " and ".join(f"id <> {i}" for i in range(1000, 2000)) + " and id > 3"
        for expr, want in ((every, [i for i in ids if i > 3]), (some, [4])):
            assert sorted(r["id"] for r in orders.scan(where=expr)) == want
            assert orders.count(where=expr) == len(want)
            assert sorted(r["id"] for r in orders.scan(where=expr, descending=True, limit=50)) == want
        assert orders.count(where=spi.parse_where(text, ORDERS)) == len([i for i in ids if i > 3])

    def test_like_is_case_sensitive_and_literal(self, provider: Any) -> None:
        spec = spi.TableSpec("lk", [spi.Field("k", "long"), spi.Field("s", "string")], ["k"])
        provider.admin.create(spec)
        t = provider.table("lk")
        for i, s in enumerate(["abc", "ABC", "a_c", "a%c", "axc", "ab", "a\nc"]):
            t.upsert({"k": i, "s": s})
        assert [r["s"] for r in t.scan(where=col("s").like("a_c"))] == ["abc", "a_c", "a%c", "axc", "a\nc"]
        assert [r["s"] for r in t.scan(where=col("s").startswith("a_"))] == ["a_c"]
        assert [r["s"] for r in t.scan(where=col("s").startswith("a%"))] == ["a%c"]
        assert [r["s"] for r in t.scan(where=col("s").like("A%"))] == ["ABC"]

    def test_string_prefix_matches_a_plain_filter(self, provider: Any) -> None:
        """``like``/``startswith`` on the first key column and on an indexed column are
        read as value ranges (see spi/planner.py); the rows must be exactly those a
        plain LIKE matcher picks, at the edges of the range too: U+10FFFF (no
        successor), U+D7FF (next to the surrogates), escaped wildcards, a trailing
        backslash, the empty string."""
        spec = spi.TableSpec(
            "pfx", [spi.Field("s", "string"), spi.Field("n", "long"), spi.Field("t", "string")], ["s", "n"], ["t"]
        )
        provider.admin.create(spec)
        table = provider.table("pfx")
        top, low = "\U0010ffff", "\ud7ff"
        values = ["", "S", "SE", "SE%", "SE%x", "SE_", "SEx", "SE\\", "SE\\x", "SEA", "SE" + top, "SE" + top + "x",
                  "SF", "Sd", "S" + top, top, top + top, top + "a", low, low + "x", "\ue000", "e", "é", "_", "%", "\\"]  # fmt: skip
        rows: list[dict[str, Any]] = [{"s": v, "n": i, "t": None if i % 7 == 3 else v} for i, v in enumerate(values)]
        table.load(rows)
        patterns = ["S_%", "SE%A", "%E", "_", "%", "SE\\%%", "SE\\_%", "SE\\\\%", "SE\\", "SE%%", "S%x", "SE"]
        for v in values:
            patterns += [escape_like(v) + "%", escape_like(v), v + "%"]
        for column in ("s", "t"):
            for pattern in dict.fromkeys(patterns):
                where = col(column).like(pattern)
                expected = [r for r in rows if r[column] is not None and like(r[column], pattern)]
                want = [(r["s"], r["n"]) for r in sorted(expected, key=lambda r: (r["s"], r["n"]))]
                got = [(r["s"], r["n"]) for r in table.scan(where=where)]
                assert got == want, (column, pattern)
                assert [(r["s"], r["n"]) for r in table.scan(where=where, descending=True)] == want[::-1]
                assert table.count(where=where) == len(want), (column, pattern)
                by_t = [(r["t"], r["s"], r["n"]) for r in table.scan(where=where, order_by="t")]
                nulls_first = sorted(expected, key=lambda r: (r["t"] is not None, r["t"] or "", r["s"], r["n"]))
                assert by_t == [(r["t"], r["s"], r["n"]) for r in nulls_first], (column, pattern)
