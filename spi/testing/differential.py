"""Differential property test: the same random operations on two providers.

Every result (rows, versions, counts, booleans, new values) and every error class
must match between the provider under test and a reference provider.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spi
from spi import Range, col
from spi.errors import KvError

SPEC = spi.TableSpec(
    "t",
    [
        spi.Field("a", "string"),
        spi.Field("b", "long"),
        spi.Field("i", "int"),
        spi.Field("d", "double"),
        spi.Field("s", "string"),
        spi.Field("flag", "bool"),
        spi.Field("ts", "timestamp"),
        spi.Field("raw", "bytes"),
    ],
    primary_key=["a", "b"],
    indexes=["i", "s"],
)

_A = st.sampled_from(["", "a", "b", "é", "a\u00e9"])
_B = st.integers(-3, 3)
_I = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from([2**31 - 1, -(2**31)]))
_D = st.one_of(st.none(), st.sampled_from([-1.5, 0.0, -0.0, 2.25, 1e300, math.inf, math.nan]), st.integers(-2, 2))
_S = st.one_of(st.none(), st.sampled_from(["", "x", "xy", "y", "X", "x_", "\U0001f600"]))
_TS = st.one_of(
    st.none(),
    st.sampled_from(
        [
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
            dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        ]
    ),
)
_RAW = st.one_of(st.none(), st.sampled_from([b"", b"\x00", b"\x00\xff"]))
_VALUE = {"i": _I, "d": _D, "s": _S, "flag": st.one_of(st.none(), st.booleans()), "ts": _TS, "raw": _RAW}
_BAD = st.sampled_from(
    [
        ("i", 2**31),
        ("i", "1"),
        ("s", 5),
        ("d", "x"),
        ("flag", 1),
        ("nope", 1),
        ("ts", dt.datetime(2020, 1, 1)),
        ("s", "a\x00"),
    ]
)


@st.composite
def _changes(draw: Any, allow_bad: bool = True) -> dict[str, Any]:
    cols = draw(st.lists(st.sampled_from(sorted(_VALUE)), unique=True, max_size=3))
    out = {c: draw(_VALUE[c]) for c in cols}
    if allow_bad and draw(st.integers(0, 9)) == 0:
        c, v = draw(_BAD)
        out[c] = v
    return out


@st.composite
def _key(draw: Any) -> dict[str, Any]:
    return {"a": draw(_A), "b": draw(_B)}


@st.composite
def _where(draw: Any) -> Any:
    leaves = st.one_of(
        st.builds(lambda v: col("i") == v, _I),
        st.builds(lambda v: col("i") > v, st.integers(-2, 2)),
        st.builds(lambda vs: col("i").isin(vs), st.lists(_I, max_size=3)),
        st.builds(lambda v: col("s") == v, _S),
        st.builds(lambda v: col("s") <= v, st.sampled_from(["", "x", "y"])),
        st.builds(lambda v: col("s").startswith(v), st.sampled_from(["", "x", "x_"])),
        st.builds(lambda v: col("d") >= v, st.sampled_from([-1.0, 0.0, math.inf, math.nan])),
        st.builds(lambda v: col("b") < v, _B),
        st.builds(lambda v: col("a") == v, _A),
        st.just(col("ts").is_null()),
        st.just(col("flag").not_null()),
    )
    expr = st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(lambda x, y: x & y, inner, inner),
            st.builds(lambda x, y: x | y, inner, inner),
            st.builds(lambda x: ~x, inner),
        ),
        max_leaves=4,
    )
    return draw(st.one_of(st.none(), expr))


@st.composite
def _range(draw: Any) -> Range | None:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return None
    if kind == 1:
        return Range.prefix((draw(_A),))
    start = draw(st.one_of(st.none(), st.tuples(_A), st.tuples(_A, _B)))
    end = draw(st.one_of(st.none(), st.tuples(_A), st.tuples(_A, _B)))
    return Range(start, end, start_inclusive=draw(st.booleans()), end_inclusive=draw(st.booleans()))


_SCAN = st.fixed_dictionaries(
    {
        "range": _range(),
        "where": _where(),
        "order_by": st.sampled_from([None, None, "i", "s", "b", "a"]),
        "descending": st.booleans(),
        "limit": st.one_of(st.none(), st.integers(0, 6)),
    }
)

_OPS = st.one_of(
    st.tuples(st.just("upsert"), _key(), _changes()),
    st.tuples(st.just("insert"), _key(), _changes()),
    st.tuples(st.just("replace"), _key(), _changes(), st.one_of(st.none(), st.integers(1, 3))),
    st.tuples(
        st.just("update"),
        _key(),
        _changes(),
        st.one_of(st.none(), _changes(allow_bad=False)),
        st.one_of(st.none(), st.integers(1, 3)),
    ),
    st.tuples(st.just("delete"), _key(), st.one_of(st.none(), st.integers(1, 3))),
    st.tuples(st.just("increment"), _key(), st.sampled_from(["i", "d", "s"]), st.sampled_from([1, -1, 2**31, 0.5])),
    st.tuples(st.just("cas"), _key(), st.sampled_from(["i", "s"]), _I | _S, _I | _S),
    st.tuples(st.just("read"), _key()),
    st.tuples(st.just("scan"), _SCAN),
    st.tuples(st.just("pages"), _SCAN, st.integers(1, 4)),
    st.tuples(st.just("count"), _range(), _where()),
    st.tuples(st.just("delete_range"), _range(), _where()),
    st.tuples(st.just("update_range"), _range(), _where(), _changes()),
    st.tuples(
        st.just("load"),
        st.lists(st.tuples(_key(), _changes()), max_size=6),
        st.sampled_from(["upsert", "insert", "replace"]),
        st.integers(1, 4),
    ),
    st.tuples(st.just("txn"), st.lists(st.tuples(_key(), _changes(allow_bad=False)), max_size=3), st.booleans()),
)


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else value
    if isinstance(value, spi.Row):
        return ({k: _norm(v) for k, v in value.items()}, value.version)
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    return value


def _apply(p: Any, op: tuple[Any, ...]) -> Any:
    t = p.table("t")
    kind = op[0]
    if kind == "upsert":
        return t.upsert({**op[1], **op[2]})
    if kind == "insert":
        return t.insert({**op[1], **op[2]})
    if kind == "replace":
        return t.replace({**op[1], **op[2]}, version=op[3])
    if kind == "update":
        return t.update(op[1], op[2], default=op[3], version=op[4])
    if kind == "delete":
        return t.delete(op[1], version=op[2])
    if kind == "increment":
        return t.increment(op[1], op[2], op[3])
    if kind == "cas":
        return t.compare_and_swap(op[1], op[2], op[3], op[4])
    if kind == "read":
        return t.read(op[1])
    if kind == "scan":
        return list(t.scan(**op[1]))
    if kind == "pages":
        args = {k: v for k, v in op[1].items() if k != "limit"}
        out, token = [], None
        for _ in range(50):
            page = t.scan_page(**args, limit=op[2], after=token)
            out.append((list(page.rows), page.next_token is None))
            token = page.next_token
            if token is None:
                break
        return out
    if kind == "count":
        return t.count(op[1], where=op[2])
    if kind == "delete_range":
        return t.delete_range(op[1], where=op[2])
    if kind == "update_range":
        return t.update_range(op[1], where=op[2], changes=op[3])
    if kind == "load":
        return t.load([{**k, **c} for k, c in op[1]], mode=op[2], batch_size=op[3])
    if kind == "txn":

        def body(tx: Any) -> list[int]:
            versions = [tx.table("t").upsert({**k, **c}) for k, c in op[1]]
            if op[2]:
                raise _Rollback
            return versions

        try:
            return p.run(body)
        except _Rollback:
            return "rolled back"
    raise AssertionError(kind)


class _Rollback(Exception):
    pass


def _outcome(p: Any, op: tuple[Any, ...]) -> Any:
    try:
        return ("ok", _norm(_apply(p, op)))
    except KvError as exc:
        return ("error", type(exc).__name__, getattr(exc, "row_index", None))


class DifferentialTests:
    """Subclass with ``provider_factory`` and ``reference_factory`` fixtures."""

    differential_examples = 200
    """How many random sequences to run (the issues ask for at least 200)."""

    @pytest.fixture
    def reference_factory(self) -> Callable[[], Any]:
        return lambda: spi.connect("memory://")

    def test_differential(self, provider_factory: Callable[[], Any], reference_factory: Callable[[], Any]) -> None:
        @settings(
            max_examples=self.differential_examples,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.lists(_OPS, min_size=1, max_size=25))
        def run(ops: list[tuple[Any, ...]]) -> None:
            with _opened(provider_factory) as p, _opened(reference_factory) as ref:
                p.admin.create(SPEC)
                ref.admin.create(SPEC)
                for i, op in enumerate(ops):
                    got, want = _outcome(p, op), _outcome(ref, op)
                    assert got == want, f"operation {i} {op!r}: provider gave {got!r}, reference {want!r}"
                final = _outcome(p, ("scan", {}))
                assert final == _outcome(ref, ("scan", {}))

        run()


class _opened:
    def __init__(self, factory: Callable[[], Any]) -> None:
        self._p = factory()

    def __enter__(self) -> Any:
        return self._p

    def __exit__(self, *exc: object) -> None:
        self._p.close()
