"""Unit tests of the change-feed pieces of the SPI that are not provider behaviour:
the spec flag, the event type, the argument checks and the watch loop."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import pickle
import time
from typing import Any

import pytest

import spi
from spi.changes import (
    Change,
    Progress,
    Wanted,
    check_revision,
    check_tables,
    check_timeout,
    check_wanted,
    check_watch,
    follow,
    key_filter,
    require_feed,
)
from spi.errors import InvalidFieldError, KvError, RevisionCompactedError, SchemaError
from spi.spec import plan_schema_change

FIELDS = [("region", "string"), ("id", "long"), ("note", "string")]
PLAIN = spi.TableSpec("orders", FIELDS, ["region", "id"], ["note"])
FED = spi.TableSpec("orders", FIELDS, ["region", "id"], ["note"], changes=True)


class TestSpecFlag:
    def test_a_spec_without_the_flag_is_unchanged(self) -> None:
        assert "changes" not in PLAIN.to_dict()
        canonical = json.dumps(["orders", sorted(FIELDS), ["region", "id"], ["note"]])  # the form before the flag
        assert PLAIN.fingerprint() == hashlib.sha256(canonical.encode()).hexdigest()[:16]
        assert spi.TableSpec("orders", FIELDS, ["region", "id"], ["note"], changes=False) == PLAIN
        assert repr(PLAIN).endswith("indexes=['note'])")

    def test_the_flag_takes_part_in_equality_fingerprint_and_json(self) -> None:
        assert FED != PLAIN and hash(FED) != hash(PLAIN)
        assert FED.fingerprint() != PLAIN.fingerprint()
        assert FED.to_dict()["changes"] is True
        assert spi.TableSpec.from_json(FED.to_json()) == FED
        assert spi.TableSpec.from_dict({**PLAIN.to_dict(), "changes": False}) == PLAIN
        assert "changes=True" in repr(FED)
        assert pickle.loads(pickle.dumps(FED)) == FED and pickle.loads(pickle.dumps(PLAIN)) == PLAIN

    def test_the_flag_must_be_a_boolean(self) -> None:
        with pytest.raises(SchemaError, match="'changes' must be true or false"):
            spi.TableSpec.from_dict({**PLAIN.to_dict(), "changes": "yes"})
        with pytest.raises(SchemaError):
            spi.TableSpec("orders", FIELDS, ["region", "id"], changes=1)  # type: ignore[arg-type]

    def test_turning_the_feed_on_or_off_is_a_compatible_change(self) -> None:
        assert plan_schema_change(PLAIN, FED).changes is True and not plan_schema_change(PLAIN, FED).empty
        assert plan_schema_change(FED, PLAIN).changes is False
        assert plan_schema_change(FED, FED).empty
        assert PLAIN.with_changes(True) == FED and FED.with_changes(False) == PLAIN and FED.with_changes(True) is FED


class TestArguments:
    def test_revisions(self) -> None:
        assert check_revision(0) == 0 and check_revision(7) == 7
        assert check_revision(2**63 - 1) == 2**63 - 1
        for bad in (-1, True, 1.0, "3", None, 2**63, 10**5000):
            with pytest.raises(InvalidFieldError, match="an integer from 0 to 9223372036854775807"):
                check_revision(bad)

    def test_timeouts(self) -> None:
        assert check_timeout(None) is None and check_timeout(0) == 0.0 and check_timeout(1.5) == 1.5
        for bad in (-1, float("nan"), float("inf"), "1", True):
            with pytest.raises(InvalidFieldError):
                check_timeout(bad)

    def test_tables_and_key_filters(self) -> None:
        assert check_tables(None, None, None) is None
        assert check_tables("a", None, None) == ["a"]
        assert check_tables(["a", "b", "a"], None, None) == ["a", "b"]
        assert check_tables(["a"], {"region": "eu"}, None) == ["a"]
        with pytest.raises(InvalidFieldError, match="exactly one table"):
            check_tables(["a", "b"], None, ("eu",))
        with pytest.raises(InvalidFieldError, match="exactly one table"):
            check_tables(None, ("eu", 1), None)
        with pytest.raises(InvalidFieldError, match="not both"):
            check_tables("a", ("eu", 1), ("eu",))
        with pytest.raises(InvalidFieldError):
            check_tables(5, None, None)

    def test_key_filter_encodes_keys_and_prefixes(self) -> None:
        full = key_filter(FED, {"id": 1, "region": "eu"}, None)
        part = key_filter(FED, None, ("eu",))
        assert full is not None and part is not None
        assert full[1] is True and part[1] is False and full[0].startswith(part[0])
        assert key_filter(FED, None, None) is None
        with pytest.raises(InvalidFieldError):
            key_filter(FED, ("eu",), None)  # a key must be complete

    def test_a_table_without_a_feed_is_a_schema_error(self) -> None:
        assert require_feed(FED) is FED
        with pytest.raises(SchemaError, match='"changes": true'):
            require_feed(PLAIN)


def test_change_is_a_frozen_value() -> None:
    when = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    c = Change(3, "orders", "put", {"region": "eu", "id": 1}, {"region": "eu", "id": 1, "note": None}, 1, when)
    assert c == Change(3, "orders", "put", {"region": "eu", "id": 1}, {"region": "eu", "id": 1, "note": None}, 1, when)
    with pytest.raises(AttributeError):
        c.revision = 4  # type: ignore[misc]
    assert spi.Change is Change


def test_revision_compacted_error_names_the_oldest_revision() -> None:
    exc = RevisionCompactedError("compacted", oldest=12)
    assert isinstance(exc, KvError) and exc.oldest == 12 and spi.RevisionCompactedError is RevisionCompactedError


class _Signal:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def mark(self) -> Any:
        return len(self.waits)

    def wait(self, marker: Any, timeout: float) -> None:
        self.waits.append(timeout)
        time.sleep(min(timeout, 0.01))


def test_follow_yields_what_each_read_returns_and_stops_after_the_timeout() -> None:
    when = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    batches = [
        [Change(1, "t", "delete", {"k": 1}, None, None, when)],
        [],
        [Change(2, "t", "delete", {"k": 2}, None, None, when)],
    ]
    signal = _Signal()
    args = check_watch("t", None, None, None, 0.05)
    got = [c.revision for c in follow(lambda: (batches.pop(0) if batches else [], False), lambda: 9, signal, args)]
    assert got == [1, 2]
    assert signal.waits and all(w <= 0.05 for w in signal.waits)


def test_follow_yields_progress_while_nothing_matches_and_progress_does_not_reset_the_timeout() -> None:
    signal = _Signal()
    args = check_watch("t", None, None, None, 0.2, progress=0.05)
    got = list(follow(lambda: ([], False), lambda: 7, signal, args))
    assert got and all(g == Progress(7) for g in got)
    assert 2 <= len(got) <= 5  # about every 0.05 s, and the timeout still ends it


def test_ops_prev_progress_and_initial_are_checked() -> None:
    assert check_wanted(False, None) == Wanted(None, False)
    assert check_wanted(True, ["put", "expire"]) == Wanted(frozenset({0, 2}), True)
    assert check_wanted(False, "delete").ops == frozenset({1})
    for prev, ops in ((1, None), (False, {"puts"}), (False, 3), (False, [None])):
        with pytest.raises(InvalidFieldError):
            check_wanted(prev, ops)
    for progress in (0, -1, True, float("nan"), "1"):
        with pytest.raises(InvalidFieldError, match="progress"):
            check_watch("t", None, None, None, None, progress=progress)
    with pytest.raises(InvalidFieldError, match="initial"):
        check_watch("t", None, None, 3, None, initial=True)
    with pytest.raises(InvalidFieldError, match="initial"):
        check_watch("t", None, None, None, None, initial="yes")


def test_a_provider_without_change_feeds_says_so() -> None:
    from spi.provider import ProviderBase

    class Bare(ProviderBase):
        admin = None  # type: ignore[assignment]

        def transaction(self) -> Any:
            raise NotImplementedError

    p = Bare("bare://")
    for call in (p.revision, lambda: p.changes(), lambda: p.watch("t"), lambda: p.compact(1)):
        with pytest.raises(KvError, match="does not record change feeds"):
            call()
