"""Differential property test: the same random operations on a provider and a reference.

Every result (rows, versions, counts, booleans, new values) and every error class
must match between the provider under test and a reference provider, by default
the reference model :class:`spi.testing.reference.ReferenceProvider`, which shares
no code with the engine the real providers run on.

Revisions need not be the same numbers on both sides (SPI.md allows gaps): they are
compared through an order-preserving map built as the run goes
(:class:`spi.testing.revisions.RevisionMap`), and a ``since`` or ``compact`` revision
the operations name is the reference's, passed to the provider as its own.
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
from spi.capabilities import Capability
from spi.changes import Change
from spi.errors import KvError
from spi.testing.reference import ReferenceProvider
from spi.testing.revisions import RevisionMap

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

FED_SPEC = SPEC.with_changes(True)
"""SPEC with a change feed: used on providers that declare ``changes``, whose events
must then match the reference model's too."""

_A = st.sampled_from(["", "a", "b", "é", "a\u00e9", "\uffff", "\U00010000"])
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
            dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC),  # the same instant as the one above
        ]
    ),
)
_RAW = st.one_of(st.none(), st.sampled_from([b"", b"\x00", b"\x00\xff", b"\x01", bytearray(b"\x80")]))
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
        ("b", 7),  # a key column: refused in changes, a new key in a row
        ("a", None),
        ("raw", "text"),
        ("d", True),
    ]
)
_BAD_WHERE = st.sampled_from(
    [col("s") == 5, col("i") == "1", col("flag") == 1, col("nope").is_null(), col("i").like("1%"), col("raw") == "x"]
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
def _cas(draw: Any) -> tuple[Any, ...]:
    column = draw(st.sampled_from(["i", "s", "d"]))
    values = st.one_of(_VALUE[column], _VALUE[column], _VALUE[column], _I | _S)  # now and then a wrong type
    return ("cas", draw(_key()), column, draw(values), draw(values))


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
        st.builds(lambda v: col("a") > v, _A),
        st.builds(lambda v: col("a").startswith(v), st.sampled_from(["", "a", "\u00e9"])),
        st.builds(lambda v: col("i") <= v, st.integers(-2, 2)),
        st.builds(lambda v: col("s") > v, st.sampled_from(["", "x", "\uffff"])),
        st.builds(lambda v: col("s").like(v), st.sampled_from(["x%", "_", "%y", "x\\_", "%", "\\%"])),
        st.builds(lambda v: col("d") == v, st.sampled_from([0, -0.0, math.nan, 2.25])),
        st.builds(lambda vs: col("d").isin(vs), st.lists(_D, max_size=2)),
        st.builds(lambda v: col("ts") <= v, _TS.filter(lambda v: v is not None)),
        st.builds(lambda v: col("raw") > v, st.sampled_from([b"", b"\x00", b"\x7f"])),
        st.builds(lambda v: col("flag") == v, st.booleans()),
        st.just(col("ts").is_null()),
        st.just(col("flag").not_null()),
        st.just(col("i").is_null()),  # indexed: the index's null entries
        st.just(col("s").not_null()),  # indexed: the index's values
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
    if draw(st.integers(0, 19)) == 0:
        return draw(_BAD_WHERE)  # raised when the scan runs
    return draw(st.one_of(st.none(), expr))


@st.composite
def _range(draw: Any) -> Range | None:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return None
    if kind == 1:
        return Range.prefix((draw(_A),))
    if kind == 5:
        return Range.singleton((draw(_A), draw(_B)))
    start = draw(st.one_of(st.none(), st.tuples(_A), st.tuples(_A, _B)))
    end = draw(st.one_of(st.none(), st.tuples(_A), st.tuples(_A, _B)))
    return Range(start, end, start_inclusive=draw(st.booleans()), end_inclusive=draw(st.booleans()))


_KEPT_VERSION = st.one_of(st.integers(1, 9), st.integers(1, 9), st.sampled_from([0, None, True, 2**63]))

_SCAN = st.fixed_dictionaries(
    {
        "range": _range(),
        "where": _where(),
        "order_by": st.sampled_from([None, None, None, "i", "s", "b", "a", "i", "s", "flag"]),  # flag: not indexed
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
    st.tuples(
        st.just("increment"),
        _key(),
        st.sampled_from(["i", "d", "s", "i", "d", "b", "flag"]),
        st.sampled_from([1, -1, 2**31, -(2**31), 0.5, True]),
    ),
    _cas(),
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
    st.tuples(
        st.just("txn_delete_range"),
        st.lists(st.tuples(_key(), _changes(allow_bad=False)), max_size=3),
        _range(),
        _where(),
    ),
    st.tuples(
        st.just("load_kept"),
        st.lists(st.tuples(_key(), _changes(), _KEPT_VERSION), max_size=6),
        st.sampled_from(["upsert", "insert", "replace"]),
        st.integers(1, 4),
    ),
    st.tuples(st.just("swap"), st.lists(st.tuples(_key(), _changes(allow_bad=False), st.integers(1, 9)), max_size=4)),
)


_FEED_OPS = st.one_of(
    _OPS,
    st.tuples(
        st.just("changes"),
        st.integers(0, 4),
        st.one_of(
            st.none(),
            st.builds(lambda k: {"key": k}, _key()),
            st.builds(lambda a: {"prefix": (a,)}, _A),
            st.builds(lambda ops: {"ops": ops, "prev": True}, st.sets(st.sampled_from(["put", "delete"]))),
        ),
        st.one_of(st.none(), st.integers(0, 3)),
    ),
    st.tuples(st.just("compact"), st.integers(0, 4)),
)
"""The operations of a change-fed run: every write, reading the feed, compacting it."""


def _same(revision: int) -> int:
    return revision


def _norm(value: Any, revision: Callable[[int], int] = _same) -> Any:
    """``value`` in comparable form; an event's revision as ``revision`` maps it."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else value
    if isinstance(value, spi.Row):
        return ({k: _norm(v) for k, v in value.items()}, value.version)
    if isinstance(value, Change):  # the commit time differs between the two
        head = (revision(value.revision), value.table, value.op, _norm(value.key), _norm(value.row), value.version)
        return (*head, value.created, _norm(value.prev))
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_norm(v, revision) for v in value]
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
    if kind == "load_kept":
        rows = [spi.Row({**k, **c}, v) for k, c, v in op[1]]
        return t.load(rows, mode=op[2], batch_size=op[3], keep_versions=True)
    if kind == "swap":
        staging = p.admin.create_staging("t")
        staged = p.table(staging).load([spi.Row({**k, **c}, v) for k, c, v in op[1]], keep_versions=True)
        p.admin.swap_rows("t", staging)
        replaced = p.table(staging).count()
        p.admin.drop(staging)
        return staged, replaced
    if kind == "changes":
        return list(p.changes("t", since=op[1], limit=op[3], **(op[2] or {})))
    if kind == "compact":
        return p.compact(op[1])
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
    if kind == "txn_delete_range":  # a range delete that meets the transaction's own writes

        def upserts_then_delete(tx: Any) -> tuple[list[int], int, list[Any]]:
            t = tx.table("t")
            versions = [t.upsert({**k, **c}) for k, c in op[1]]
            return versions, t.delete_range(op[2], where=op[3]), list(t.scan())

        return p.run(upserts_then_delete)
    raise AssertionError(kind)


class _Rollback(Exception):
    pass


def _outcome(p: Any, op: tuple[Any, ...], revision: Callable[[int], int] = _same) -> Any:
    try:
        return ("ok", _norm(_apply(p, op), revision))
    except KvError as exc:
        return ("error", type(exc).__name__, getattr(exc, "row_index", None))


_REVISION_OPS = ("changes", "compact")
"""Operations whose second item is a revision (the reference's)."""


def _follow(p: Any, ref: Any, revisions: RevisionMap) -> None:
    """Pair the revisions both sides committed since the last call, in order, and check
    that the provider's current revision is the reference's. The feeds are read only
    when the reference took a new revision (a load may take several)."""
    mine, theirs = p.revision(), ref.revision()
    p_last, r_last = revisions.last
    if theirs != r_last:
        revisions.pair_feeds(
            [e.revision for e in p.changes(since=p_last)], [e.revision for e in ref.changes(since=r_last)]
        )
    assert mine == revisions.last[0] and theirs == revisions.last[1], (
        f"the provider is at revision {mine}, the reference at {theirs}: after the pairs up to {revisions.last}"
    )


def _feed_outcomes(p: Any, ref: Any, op: tuple[Any, ...], revisions: RevisionMap | None) -> tuple[Any, Any]:
    """The outcomes of ``op`` on both sides of a run, revisions compared through the map."""
    if revisions is None:
        return _outcome(p, op), _outcome(ref, op)
    if op[0] in _REVISION_OPS:
        _follow(p, ref, revisions)
        mine = (op[0], revisions.to_provider(op[1]), *op[2:])
        return _outcome(p, mine, revisions.to_reference), _outcome(ref, op)
    return _outcome(p, op), _outcome(ref, op)


def _k(a: str, b: int) -> dict[str, Any]:
    return {"a": a, "b": b}


def _r(a: str, b: int, version: int, **values: Any) -> tuple[Any, ...]:
    """A row as :func:`_brief` writes it: key, version, the non-null other columns."""
    return (a, b, version, values)


def _brief(value: Any) -> Any:
    """A result in the literal form of :data:`KNOWN_ANSWERS` (NaN as "nan", timestamps as ISO text)."""
    if isinstance(value, spi.Row):
        others = {c: _brief(v) for c, v in value.items() if c not in SPEC.primary_key and v is not None}
        return _r(value["a"], value["b"], value.version, **others)
    if isinstance(value, (list, tuple)):
        return [_brief(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


def _known_outcome(p: Any, op: tuple[Any, ...]) -> Any:
    try:
        return ("ok", _brief(_apply(p, op)))
    except KvError as exc:
        return ("error", type(exc).__name__, exc.row_index)


_NOON_CEST = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
_INVALID = ("error", "InvalidFieldError", None)
_ROW_A1 = _r("a", 1, 2, i=1, s="x", d=0.0, raw=b"\x00\xff")
_ROW_B = _r("b", -1, 2, i=2**31 - 2, ts="2024-05-01T10:00:00+00:00")
_ROW_D1, _ROW_D2, _ROW_D3 = _r("d", 1, 1, d="nan"), _r("d", 2, 1, d=math.inf), _r("d", 3, 1, d=-1.5)
_ROW_S1, _ROW_S2 = _r("s", 1, 1, s="X", raw=b"\x80", flag=False), _r("s", 2, 1, s="\u00e9", flag=True)
_ROW_S3, _ROW_S4 = _r("s", 3, 1, s="\U0001f600"), _r("s", 4, 1, s="")

KNOWN_ANSWERS: list[tuple[tuple[Any, ...], Any]] = [
    # Writes, versions and conditions.
    (("insert", _k("a", 1), {"i": 1, "s": "x"}), ("ok", 1)),
    (("insert", _k("a", 1), {}), ("error", "RowExistsError", None)),
    (("upsert", _k("a", 1), {"d": -0.0, "raw": bytearray(b"\x00\xff")}), ("ok", 2)),
    (("read", _k("a", 1)), ("ok", _ROW_A1)),
    (("upsert", _k("b", -1), {"i": 2**31 - 1, "ts": _NOON_CEST}), ("ok", 1)),
    (("increment", _k("b", -1), "i", 1), _INVALID),
    (("increment", _k("b", -1), "i", -1), ("ok", 2**31 - 2)),
    (("increment", _k("c", 0), "d", 0.5), ("ok", 0.5)),
    (("increment", _k("c", 0), "s", 1), _INVALID),
    (("increment", _k("c", 0), "i", 0.5), _INVALID),
    (("update", _k("z", 0), {"i": 1}, None, None), ("error", "RowNotFoundError", None)),
    (("update", _k("z", 0), {"i": 1}, {"s": "y"}, None), ("ok", 1)),
    (("update", _k("z", 0), {"b": 5}, None, None), _INVALID),
    (("replace", _k("z", 0), {}, 5), ("error", "VersionMismatchError", None)),
    (("replace", _k("y", 0), {}, 1), ("error", "RowNotFoundError", None)),
    (("read", _k("z", 0)), ("ok", _r("z", 0, 1, i=1, s="y"))),
    (("delete", _k("z", 0), 1), ("ok", True)),
    (("delete", _k("z", 0), None), ("ok", False)),
    (("delete", _k("z", 0), 1), ("error", "RowNotFoundError", None)),
    (("cas", _k("c", 0), "i", None, 7), ("ok", True)),
    (("cas", _k("c", 0), "i", None, 8), ("ok", False)),
    (("read", _k("c", 0)), ("ok", _r("c", 0, 2, d=0.5, i=7))),
    (("cas", _k("n", 0), "s", None, "v"), ("ok", True)),
    (("upsert", _k("c", 0), {"ts": dt.datetime(2020, 1, 1)}), _INVALID),
    (("upsert", _k("c", 0), {"s": "a\x00"}), _INVALID),
    (("upsert", _k("c", 0), {"nope": 1}), _INVALID),
    (("upsert", _k("c", 0), {"i": "1"}), _INVALID),
    (("read", _k("b", -1)), ("ok", _ROW_B)),
    # The order of values, filters and ranges.
    (("upsert", _k("d", 1), {"d": math.nan}), ("ok", 1)),
    (("upsert", _k("d", 2), {"d": math.inf}), ("ok", 1)),
    (("upsert", _k("d", 3), {"d": -1.5}), ("ok", 1)),
    (("upsert", _k("s", 1), {"s": "X", "raw": b"\x80", "flag": False}), ("ok", 1)),
    (("upsert", _k("s", 2), {"s": "\u00e9", "flag": True}), ("ok", 1)),
    (("upsert", _k("s", 3), {"s": "\U0001f600"}), ("ok", 1)),
    (("upsert", _k("s", 4), {"s": ""}), ("ok", 1)),
    (("scan", {"where": col("d") >= math.inf}), ("ok", [_ROW_D1, _ROW_D2])),
    (("scan", {"where": col("d") >= math.nan}), ("ok", [_ROW_D1])),
    (("count", None, col("d") != 5), ("ok", 5)),
    (("scan", {"where": col("d") == 0}), ("ok", [_ROW_A1])),
    (("scan", {"where": col("a") == "s", "order_by": "s"}), ("ok", [_ROW_S4, _ROW_S1, _ROW_S2, _ROW_S3])),
    (
        ("scan", {"where": col("a") == "s", "order_by": "s", "descending": True}),
        ("ok", [_ROW_S3, _ROW_S2, _ROW_S1, _ROW_S4]),
    ),
    (
        ("scan", {"where": col("i").not_null() | (col("a") == "n"), "order_by": "i"}),
        ("ok", [_r("n", 0, 1, s="v"), _ROW_A1, _r("c", 0, 2, d=0.5, i=7), _ROW_B]),
    ),
    (("count", None, col("raw") > b"\x01"), ("ok", 1)),
    (("count", None, col("flag") < True), ("ok", 1)),
    (("scan", {"where": col("ts") == dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC)}), ("ok", [_ROW_B])),
    (("count", Range.prefix(("d",)), None), ("ok", 3)),
    (("count", Range(("c",), ("d",), start_inclusive=False, end_inclusive=True), None), ("ok", 3)),
    (("count", Range(("d",), ("d", 2)), None), ("ok", 1)),
    (("count", Range(("d",), None, start_inclusive=False), None), ("ok", 5)),
    (("count", Range(("b",), ("c",)), None), ("ok", 1)),
    (("count", Range.singleton(("c", 0)), None), ("ok", 1)),
    (("scan", {"limit": 0}), ("ok", [])),
    (("scan", {"range": Range.prefix(("s",)), "limit": 2}), ("ok", [_ROW_S1, _ROW_S2])),
    (
        ("pages", {"range": Range.prefix(("d",)), "descending": True}, 2),
        ("ok", [[[_ROW_D3, _ROW_D2], False], [[_ROW_D1], True]]),
    ),
    (("scan", {"where": col("s") == 5}), _INVALID),
    (("count", None, col("nope").is_null()), _INVALID),
    (("scan", {"order_by": "flag"}), _INVALID),
    (("scan", {"where": col("i").like("1%")}), _INVALID),
    (("count", None, col("i").isin([None, 7])), ("ok", 1)),
    (("count", None, ~col("i").isin([None, 8])), ("ok", 0)),
    (("count", None, ~col("i").isin([1, 7])), ("ok", 1)),
    (("count", None, col("s").like("_")), ("ok", 5)),
    (("count", None, col("s").startswith("x_")), ("ok", 0)),
    (("count", None, col("s").like("%")), ("ok", 6)),
    # Bulk loads: batches commit one by one; row_index is the bad row's input position.
    (
        ("load", [(_k("l", 1), {}), (_k("l", 2), {}), (_k("l", 3), {"i": "bad"})], "insert", 2),
        ("error", "InvalidFieldError", 2),
    ),
    (("count", Range.prefix(("l",)), None), ("ok", 2)),
    (("load", [(_k("l", 3), {}), (_k("l", 3), {})], "insert", 5), ("error", "RowExistsError", 1)),
    (("load", [(_k("l", 4), {}), (_k("l", 1), {})], "insert", 1), ("error", "RowExistsError", 1)),
    (("count", Range.prefix(("l",)), None), ("ok", 3)),
    (("load", [(_k("l", 1), {"i": 5}), (_k("l", 1), {"s": "q"})], "upsert", 10), ("ok", 2)),
    (("read", _k("l", 1)), ("ok", _r("l", 1, 3, i=5, s="q"))),
    (("load", [(_k("l", 1), {"d": 1.0})], "replace", 1), ("ok", 1)),
    (("read", _k("l", 1)), ("ok", _r("l", 1, 4, d=1.0))),
    # Transactions, range writes, and versions restarting after a delete.
    (("txn", [(_k("t", 1), {"i": 1}), (_k("t", 1), {"i": 2})], False), ("ok", [1, 2])),
    (("txn", [(_k("t", 1), {"i": 3})], True), ("ok", "rolled back")),
    (("read", _k("t", 1)), ("ok", _r("t", 1, 2, i=2))),
    (("delete", _k("t", 1), None), ("ok", True)),
    (("upsert", _k("t", 1), {}), ("ok", 1)),
    (("update_range", Range.prefix(("d",)), col("d") > 0, {"s": "pos"}), ("ok", 2)),
    (("read", _k("d", 1)), ("ok", _r("d", 1, 2, d="nan", s="pos"))),
    (("update_range", None, None, {"a": "q"}), _INVALID),
    (("delete_range", None, col("s") == "pos"), ("ok", 2)),
    (("count", Range.prefix(("d",)), None), ("ok", 1)),
    # Loads that keep versions: each row is written with its own version.
    (("load_kept", [(_k("k", 1), {"i": 3}, 7), (_k("k", 2), {}, 0)], "insert", 1), ("error", "InvalidFieldError", 1)),
    (("read", _k("k", 1)), ("ok", _r("k", 1, 7, i=3))),
    (("load_kept", [(_k("k", 1), {"s": "z"}, 2)], "upsert", 5), ("ok", 1)),
    (("read", _k("k", 1)), ("ok", _r("k", 1, 2, i=3, s="z"))),
    (("swap", [(_k("k", 5), {"i": 1}, 4)]), ("ok", [1, 14])),
    (("scan", {}), ("ok", [_r("k", 5, 4, i=1)])),
]
"""A hand-checked sequence of operations and their results, in the form of :func:`_brief`."""


class DifferentialTests:
    """Subclass with a ``provider_factory`` fixture (``reference_factory`` defaults to the reference model)."""

    differential_examples = 200
    """How many random sequences to run (the issues ask for at least 200)."""

    @pytest.fixture
    def reference_factory(self) -> Callable[[], Any]:
        """What the provider is compared with: a fresh reference model each call."""
        return ReferenceProvider

    def test_differential(self, provider_factory: Callable[[], Any], reference_factory: Callable[[], Any]) -> None:
        with _opened(provider_factory) as probe:
            fed = Capability.CHANGES in probe.capabilities

        @settings(
            max_examples=self.differential_examples,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.lists(_FEED_OPS if fed else _OPS, min_size=1, max_size=25))
        def run(ops: list[tuple[Any, ...]]) -> None:
            with _opened(provider_factory) as p, _opened(reference_factory) as ref:
                p.admin.create(FED_SPEC if fed else SPEC)
                ref.admin.create(FED_SPEC if fed else SPEC)
                revisions = RevisionMap() if fed else None
                for i, op in enumerate(ops):
                    got, want = _feed_outcomes(p, ref, op, revisions)
                    assert got == want, f"operation {i} {op!r}: provider gave {got!r}, reference {want!r}"
                final = _outcome(p, ("scan", {}))
                assert final == _outcome(ref, ("scan", {}))
                if revisions is not None:  # the whole feed: every event of every write, in order
                    got, want = _feed_outcomes(p, ref, ("changes", 0, {"prev": True}, None), revisions)
                    assert got == want

        run()

    def test_known_answers(self, provider_factory: Callable[[], Any], reference_factory: Callable[[], Any]) -> None:
        """Both sides give the hand-checked answers, so the differential test cannot pass
        on a reference that makes the provider's mistakes."""
        for side, factory in (("provider", provider_factory), ("reference", reference_factory)):
            with _opened(factory) as p:
                p.admin.create(SPEC)
                for i, (op, want) in enumerate(KNOWN_ANSWERS):
                    got = _known_outcome(p, op)
                    assert got == want, f"{side}, known answer {i} {op!r}: got {got!r}, expected {want!r}"


class _opened:
    def __init__(self, factory: Callable[[], Any]) -> None:
        self._p = factory()

    def __enter__(self) -> Any:
        return self._p

    def __exit__(self, *exc: object) -> None:
        self._p.close()
