"""PostgreSQL writes as single statements (providers/postgres/table_writes.py): each write
answers by itself on the one-statement session (a disabled fast path fails here, not
in a benchmark), and what only the general path can explain still comes out exact."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi import col
from spi.clock import ManualClock

SPEC = spi.TableSpec(
    "items",
    [
        spi.Field("k", "string"),
        spi.Field("n", "long"),
        spi.Field("i", "int"),
        spi.Field("x", "double"),
        spi.Field("f", "float"),
        spi.Field("s", "string"),
        spi.Field("t", "timestamp"),
        spi.Field("b", "bytes"),
    ],
    ["k"],
    indexes=["s"],
)
FED = spi.TableSpec(SPEC.name, SPEC.fields, SPEC.primary_key, indexes=SPEC.indexes, changes=True)


def one_statement(p: Any) -> Any:
    """A table whose every database call is one auto-commit statement (a fallback to a
    transaction raises :class:`Fallback` instead)."""
    from providers.postgres.autocommit import _OneStatement
    from providers.postgres.table import PgTable

    p.table(SPEC.name).read(("warm-up",))  # learns the table's statements
    sql, _ = p._db.cached_read(SPEC.name)
    return PgTable(_OneStatement(p._db, None), sql)


@pytest.fixture
def p(pg_factory: Callable[..., Any]) -> Any:
    provider = pg_factory()
    provider.admin.create(SPEC)
    return provider


def test_every_single_key_write_is_one_statement(p: Any) -> None:
    t = one_statement(p)
    assert t.upsert({"k": "a", "n": 1, "s": "x"}) == 1
    assert t.upsert({"k": "a", "i": 7}) == 2  # merged: n and s kept
    assert t.insert({"k": "b", "x": 1.5, "f": 0.1, "b": b"\x00\x01"}) == 1
    assert t.replace({"k": "b", "x": 2.5}) == 2
    assert t.replace({"k": "b", "x": 3.5}, version=2) == 3
    assert t.update(("a",), {"s": "y"}) == 3
    assert t.update(("c",), {"n": 5}, default={"s": "new", "n": 1}) == 1
    assert t.update(("c",), {"n": 6}, default={"s": "ignored"}, version=1) == 2
    assert t.increment(("a",), "n", 10) == 11
    assert t.increment(("d",), "x", 0.5) == 0.5
    assert t.increment(("d",), "i", -3) == -3
    assert t.compare_and_swap(("a",), "s", "y", "z") is True
    assert t.compare_and_swap(("a",), "s", "y", "w") is False
    assert t.compare_and_swap(("e",), "s", None, "made") is True
    assert t.compare_and_swap(("e",), "s", None, "again") is False
    assert t.delete(("e",)) is True
    assert t.delete(("e",)) is False
    assert t.delete(("c",), version=2) is True
    table = p.table(SPEC.name)
    assert dict(table.read(("a",))) | {"t": None} == {
        "k": "a",
        "n": 11,
        "i": 7,
        "x": None,
        "f": None,
        "s": "z",
        "t": None,
        "b": None,
    }
    assert table.read(("a",)).version == 5
    b = table.read(("b",))
    assert (b["x"], b["f"], b["b"], b.version) == (3.5, None, None, 3)
    assert table.read(("c",)) is None and table.read(("e",)) is None
    assert dict(table.read(("d",)))["x"] == 0.5 and table.read(("d",)).version == 2


def test_failed_conditions_are_explained_by_the_general_path(p: Any) -> None:
    table = p.table(SPEC.name)
    table.upsert({"k": "a", "n": 1, "i": 2**31 - 1})
    with pytest.raises(spi.errors.RowExistsError):
        table.insert({"k": "a"})
    with pytest.raises(spi.errors.VersionMismatchError) as err:
        table.replace({"k": "a"}, version=5)
    assert err.value.current_version == 1
    with pytest.raises(spi.errors.RowNotFoundError):
        table.update(("zz",), {"n": 1})
    with pytest.raises(spi.errors.RowNotFoundError):
        table.delete(("zz",), version=1)
    with pytest.raises(spi.errors.InvalidFieldError, match="out of range"):
        table.increment(("a",), "i", 1)
    with pytest.raises(spi.errors.InvalidFieldError):
        table.increment(("a",), "k", 1)
    with pytest.raises(spi.errors.InvalidFieldError):
        table.compare_and_swap(("a",), "k", "a", "b")
    row = table.read(("a",))
    assert (row["n"], row["i"], row.version) == (1, 2**31 - 1, 1)  # nothing changed
    table.upsert({"k": "big", "x": 1.7e308})
    assert table.increment(("big",), "x", 1.7e308) == float("inf")  # Python's result, not PostgreSQL's error
    assert table.increment(("big",), "x", 1.0) == float("inf")
    with pytest.raises(spi.errors.InvalidFieldError, match="out of range"):
        table.increment(("big",), "x", 10**400)  # an int no double holds: the general path's error


def test_a_write_over_an_expired_row_starts_again(p: Any) -> None:
    p.clock = clock = ManualClock()  # the statements decide expiry on it (the parameter kv_now)
    p.admin.create_or_update(FED)
    table = p.table(SPEC.name)
    table.upsert({"k": "a", "n": 5, "s": "old"}, ttl=0.05)
    table.upsert({"k": "b", "n": 5}, ttl=0.05)
    table.upsert({"k": "c", "n": 5}, ttl=0.05)
    start = p.revision()
    clock.advance(0.1)  # the rows' TTL runs out
    assert table.upsert({"k": "a", "i": 1}) == 1  # the expired row's values are gone
    assert dict(table.read(("a",)))["s"] is None
    assert table.insert({"k": "b"}) == 1
    assert table.delete(("c",)) is False
    ops = [(c.op, c.key["k"]) for c in p.changes(SPEC.name, since=start)]
    assert ops == [("expire", "a"), ("put", "a"), ("expire", "b"), ("put", "b"), ("expire", "c")]


def test_single_statement_writes_decide_expiry_on_a_test_clock(p: Any) -> None:
    """With a test clock every single-key write is still one statement, and its SQL
    gives and checks expiry on that clock (the parameter kv_now), to the microsecond."""
    p.clock = clock = ManualClock()
    t = one_statement(p)
    for k in "abcde":
        assert t.upsert({"k": k, "n": 1}, ttl=10) == 1
    expiry = clock.now() + dt.timedelta(seconds=10)
    assert {r["k"]: r.expires_at for r in p.table(SPEC.name).scan()} == dict.fromkeys("abcde", expiry)
    clock.advance(9.999)
    assert t.update(("a",), {"s": "kept"}) == 2  # live a millisecond before its expiry
    clock.advance(0.001)  # at the expiry of b, c, d and e: gone for every write
    assert t.insert({"k": "b"}) == 1
    assert t.delete(("c",)) is False
    assert t.increment(("d",), "n", 5) == 5
    assert t.compare_and_swap(("e",), "n", None, 7) is True
    got = {r["k"]: (r["n"], r.version, r.expires_at) for r in p.table(SPEC.name).scan()}
    assert got == {"a": (1, 2, None), "b": (None, 1, None), "d": (5, 1, None), "e": (7, 1, None)}


def test_a_spec_changed_by_another_process_is_noticed(p: Any, pg_factory: Callable[..., Any]) -> None:
    """Turning the feed on elsewhere: the next auto-commit write records its event."""
    table = p.table(SPEC.name)
    table.upsert({"k": "a", "n": 1})  # the one-statement path has the old spec now
    other = spi.connect(p.url.replace("***", ""))  # the test server trusts local connections
    try:
        other.admin.create_or_update(FED)
        start = other.revision()
    finally:
        other.close()
    table.upsert({"k": "a", "n": 2})
    table.increment(("a",), "n", 1)
    assert [(c.op, c.row["n"]) for c in p.changes(SPEC.name, since=start)] == [("put", 2), ("put", 3)]


def test_range_writes_are_set_based_and_feed_events_in_key_order(p: Any) -> None:
    p.admin.create_or_update(FED)
    table = p.table(SPEC.name)
    table.load([{"k": f"{i:03d}", "n": i, "s": "even" if i % 2 == 0 else "odd"} for i in range(100)])
    start = p.revision()
    assert table.update_range(where=col("s") == "even", changes={"i": 1}) == 50
    assert table.delete_range(spi.Range(start=("050",)), where=col("s") == "odd") == 25
    events = list(p.changes(SPEC.name, since=start))
    puts = [c.key["k"] for c in events if c.op == "put"]
    deletes = [c.key["k"] for c in events if c.op == "delete"]
    assert puts == [f"{i:03d}" for i in range(0, 100, 2)]
    assert deletes == [f"{i:03d}" for i in range(51, 100, 2)]
    assert all(c.row["i"] == 1 and c.version == 2 for c in events if c.op == "put")
    assert table.count() == 75


ALL_TYPES = spi.TableSpec("typed", [*SPEC.fields, spi.Field("ok", "bool")], ["k"], changes=True)
EDGES = [
    {"n": -(2**63), "i": 2**31 - 1, "x": -0.0, "f": 0.1, "s": "é\u2028\U0001f600", "b": b"\x00\xff", "ok": True},
    {"n": 2**63 - 1, "i": -(2**31), "x": float("nan"), "f": -3.4e38, "s": "", "b": b"", "ok": False},
    {"x": float("inf"), "t": dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=dt.UTC)},
    {"t": dt.datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=dt.UTC), "s": "x" * 70_000},
    {"t": dt.datetime(1, 1, 1, tzinfo=dt.UTC), "n": 0},
]


def _writes(table: Any, clock: ManualClock) -> None:
    """Every kind of single-key write, over live, missing and expired rows."""
    for i, values in enumerate(EDGES):
        table.upsert({"k": f"k{i}", **values}, ttl=5 if i % 2 else None)
    table.update(("k0",), {"s": "changed"})
    table.replace({"k": "k1", "n": 1})
    table.increment(("k2",), "n", 2**40)
    table.compare_and_swap(("k3",), "s", "x" * 70_000, "swapped")
    table.delete(("k4",))
    table.upsert({"k": "k5", "n": 5}, ttl=5)
    table.upsert({"k": "k6", "n": 6}, ttl=5)
    table.upsert({"k": "k7", "n": 7}, ttl=5)
    clock.advance(6)  # k5, k6 and k7 expire
    table.upsert({"k": "k5", "i": 3})  # over an expired row: its expire, then a put that created it
    table.insert({"k": "k6", "ok": True})
    table.delete(("k7",))  # an expire
    table.delete(("k1",), version=2)


def test_a_change_fed_write_records_in_its_statement_what_a_transaction_records(p: Any) -> None:
    """The events the single statement builds in SQL (providers/postgres/event_sql.py)
    read back as those a transaction records from Python: same ops, keys, rows, prev,
    created and expiry, for every type at its edges."""
    start = ManualClock()()
    p.clock = clock = ManualClock(start)
    p.admin.create(ALL_TYPES)
    p.admin.create(spi.TableSpec("twin", ALL_TYPES.fields, ALL_TYPES.primary_key, changes=True))
    p.table("typed").read(("warm-up",))  # the statements are learnt: every write below is one statement
    misses = p.stats()["fast_path_misses"]
    _writes(p.table("typed"), clock)
    assert p.stats()["fast_path_misses"] == misses

    class InTransactions:  # the same calls, each in an explicit transaction (events recorded from Python)
        def __getattr__(self, name: str) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                with p.transaction() as tx:
                    return getattr(tx.table("twin"), name)(*args, **kwargs)

            return call

    p.clock = twin_clock = ManualClock(start)  # the same times again: the same expiries
    _writes(InTransactions(), twin_clock)

    def events(name: str) -> list[str]:
        return [
            repr((c.op, c.key, c.row, c.version, c.created, c.prev, c.expires_at)) for c in p.changes(name, prev=True)
        ]

    assert events("typed") == events("twin")
    assert len(events("typed")) == 19  # 16 calls: two of them over an expired row, one an expire


def test_nothing_falls_back_once_a_statement_committed(p: Any) -> None:
    """The rule that makes a fallback safe (nothing written before it), enforced by the
    one-statement session: a call that needs a transaction after its write statement
    committed is a bug that surfaces, and so is a user's error then; neither runs the
    write again in a transaction."""
    from providers.postgres.autocommit import CommittedFallback

    t = p.table(SPEC.name)
    t.read(("warm-up",))  # learns the table's statements
    with pytest.raises(CommittedFallback):
        t._write(lambda tx: (tx.increment(("a",), "n", 1), tx.count()))
    with pytest.raises(spi.RowExistsError):
        t._write(lambda tx: (tx.increment(("a",), "n", 1), tx.insert({"k": "a"})))
    assert t.read(("a",))["n"] == 2  # each increment once


def test_every_fallback_is_counted_and_logged_with_its_reason(p: Any, caplog: pytest.LogCaptureFixture) -> None:
    t = p.table(SPEC.name)
    with caplog.at_level("DEBUG", logger="providers.postgres.autocommit"):
        t.upsert({"k": "a", "n": 1})  # the first call learns the table's statements
        t.upsert({"k": "a", "n": 2})
    misses = [r.getMessage() for r in caplog.records if "in a transaction, as" in r.getMessage()]
    assert misses == [f"write on {SPEC.name!r}: in a transaction, as the table's statements are not known yet"]
    assert p.stats()["fast_path_misses"] == 1
