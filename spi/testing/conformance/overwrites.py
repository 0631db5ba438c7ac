"""Overwrites of change-fed tables (SPI.md, "Overwrites"): ``create_staging``, a load
and ``swap_rows`` replace the rows in one transaction and one revision, whose events
(key by key, in key order: an ``"expire"`` for an old row that had expired, then a
``"put"`` of each new row or a ``"delete"`` of each old row the new rows lack) take a
reader applying the feed from the old rows to the new ones exactly."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from spi.capabilities import Capability
from spi.errors import IncompatibleSchemaError, InvalidFieldError
from spi.filters import col
from spi.row import Row
from spi.spec import Field, TableSpec
from spi.testing.conformance.changes import FED, fed_orders
from spi.testing.requirements import requires
from spi.testing.revisions import groups

SHORT = 0.3
"""Seconds an old row that must have expired lives."""


def _overwrite(provider: Any, rows: list[Any], *, keep_versions: bool = True) -> str:
    """Replace the rows of ``orders`` by ``rows`` through a staging table; its name
    (holding the old rows, not dropped)."""
    staging = provider.admin.create_staging("orders")
    provider.table(staging).load(rows, mode="insert", keep_versions=keep_versions)
    provider.admin.swap_rows("orders", staging)
    return staging


def _state(rows: Any) -> dict[tuple[Any, ...], tuple[dict[str, Any], int]]:
    return {(r["region"], r["id"]): (dict(r), r.version) for r in rows}


def _applied(events: Any, state: dict[tuple[Any, ...], Any] | None = None) -> dict[tuple[Any, ...], Any]:
    """What a reader holds after applying ``events`` to ``state``."""
    out = dict(state or {})
    for e in events:
        key = (e.key["region"], e.key["id"])
        if e.op == "put":
            out[key] = (e.row, e.version)
        else:
            out.pop(key, None)
    return out


@requires(Capability.CHANGES)
class OverwriteChangeTests:
    """Replacing a change-fed table's rows through a staging table."""

    overwrite_rows = 1200
    """Rows the big overwrite replaces (one transaction): a provider whose transactions
    hold fewer keys sets fewer."""

    def test_one_revision_deletes_and_puts_in_key_order(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.load([{"region": "eu", "id": i, "status": "old", "total": float(i)} for i in (1, 2, 3)])
        before = provider.revision()
        staging = provider.admin.create_staging("orders")
        assert not provider.admin.get_spec(staging).changes  # loading it records nothing
        new = [
            Row({"region": "eu", "id": 2, "status": "new", "total": 2.5, "note": None}, 7),
            Row({"region": "eu", "id": 3, "status": "old", "total": 3.0, "note": None}, 1),  # unchanged
            Row({"region": "eu", "id": 4, "status": "new", "total": 4.0, "note": None}, 2),
        ]
        provider.table(staging).load(new, mode="insert", keep_versions=True)
        assert provider.revision() == before
        provider.admin.swap_rows("orders", staging)
        swapped = provider.revision()
        assert swapped > before
        events = list(provider.changes("orders", since=before, prev=True))
        assert {e.revision for e in events} == {swapped}
        assert [(e.op, e.key, e.version, e.created) for e in events] == [
            ("delete", {"region": "eu", "id": 1}, None, None),
            ("put", {"region": "eu", "id": 2}, 7, False),
            ("put", {"region": "eu", "id": 3}, 1, False),
            ("put", {"region": "eu", "id": 4}, 2, True),
        ]
        assert [e.row for e in events[1:]] == [dict(r) for r in new]
        assert [e.prev and e.prev["total"] for e in events] == [1.0, 2.0, 3.0, None]
        assert _state(t.scan()) == _state(new)
        assert t.count() == 3 and [r["id"] for r in t.scan(order_by="status")] == [2, 4, 3]  # the index follows
        assert sorted(r["id"] for r in provider.table(staging).scan()) == [1, 2, 3]  # the old rows
        assert provider.table(staging).count(where=col("status") == "old") == 3  # with their index entries
        if Capability.VERIFY in provider.capabilities:
            assert provider.admin.verify("orders") == [] and provider.admin.verify(staging) == []
        provider.admin.drop(staging)
        assert provider.revision() == swapped  # a staging table has no feed: its drop records nothing

    def test_a_reader_applying_the_feed_reaches_the_new_state(self, provider: Any) -> None:
        n, h = self.overwrite_rows, self.overwrite_rows // 2
        t = fed_orders(provider)
        t.load([{"region": "eu", "id": i, "status": f"s{i % 3}"} for i in range(n)])
        t.update(("eu", 5), {"note": "twice"})
        t.delete(("eu", 6))
        new = [Row({"region": "eu", "id": i, "status": f"s{i % 5}"}, 1 + i % 4) for i in range(h, n + h)]
        new.append(Row({"region": "us", "id": 0, "note": "only here"}, 3))
        before = provider.revision()
        provider.admin.drop(_overwrite(provider, new))
        t.upsert({"region": "eu", "id": h + n // 12, "note": "after"})
        final = _state(t.scan())
        assert _applied(provider.changes("orders")) == final
        assert len(final) == n + 1 and t.count() == n + 1
        assert t.count(where=None) == len(list(t.scan(order_by="status")))
        swap = list(provider.changes("orders", since=before, limit=n + h + 1))
        assert [e.op for e in swap[:h]] == ["delete"] * (h - 1) + ["put"]  # 6 was deleted before
        assert [e.created for e in swap[h - 1 : n + h]] == [False] * h + [True] * (h + 1)
        assert groups(swap) == [n + h, 1] and before < swap[0].revision < swap[-1].revision == provider.revision()

    def test_overwrites_with_nothing_old_or_nothing_new(self, provider: Any) -> None:
        t = fed_orders(provider)
        before = provider.revision()
        provider.admin.drop(_overwrite(provider, []))
        assert provider.revision() == before  # nothing replaced nothing: no revision
        provider.admin.drop(_overwrite(provider, [{"region": "eu", "id": 1}], keep_versions=False))
        assert [(e.op, e.created, e.version) for e in provider.changes("orders", since=before)] == [("put", True, 1)]
        middle = provider.revision()
        provider.admin.drop(_overwrite(provider, []))
        assert [(e.op, e.key["id"]) for e in provider.changes("orders", since=middle)] == [("delete", 1)]
        assert t.count() == 0 and provider.revision() > middle
        assert [e.revision for e in provider.changes("orders", since=middle)] == [provider.revision()]

    def test_a_watcher_sees_the_overwrite(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.upsert({"region": "eu", "id": 1})
        seen: list[Any] = []
        watch = provider.watch("orders", timeout=10)

        def follow() -> None:
            for event in watch:
                seen.append(event)
                if len(seen) == 2:
                    break

        reader = threading.Thread(target=follow)
        reader.start()
        time.sleep(0.2)
        provider.admin.drop(_overwrite(provider, [Row({"region": "eu", "id": 2}, 1)]))
        reader.join(10)
        watch.close()
        assert [(e.op, e.key["id"]) for e in seen] == [("delete", 1), ("put", 2)]

    def test_a_failed_overwrite_leaves_rows_and_feed_untouched(self, provider: Any) -> None:
        t = fed_orders(provider)
        t.load([{"region": "eu", "id": i} for i in range(5)])
        rows, revision = _state(t.scan()), provider.revision()
        staging = provider.admin.create_staging("orders")
        provider.table(staging).load([{"region": "eu", "id": 9}])
        with pytest.raises(InvalidFieldError):  # the run fails before its swap
            provider.table(staging).load([{"region": "eu", "id": 10, "total": "x"}])
        provider.admin.drop(staging)
        staging = provider.admin.create_staging("orders")
        provider.table(staging).load([{"region": "eu", "id": 9}])
        wider = TableSpec("orders", [*FED.fields, Field("extra", "long")], FED.primary_key, FED.indexes, changes=True)
        provider.admin.create_or_update(wider)  # altered while its rows were staged
        altered = provider.revision()
        with pytest.raises(IncompatibleSchemaError):
            provider.admin.swap_rows("orders", staging)
        provider.admin.drop(staging)
        assert provider.revision() == altered >= revision  # the alter may take one
        assert list(provider.changes("orders", since=revision)) == []
        narrow = {k: ({c: v for c, v in r.items() if c != "extra"}, n) for k, (r, n) in _state(t.scan()).items()}
        assert narrow == rows


@requires(Capability.CHANGES, Capability.EXPIRY)
class OverwriteExpiryTests:
    """Old rows that had expired: no ``"delete"``, at most their ``"expire"``."""

    def test_expired_old_rows_give_no_delete(self, provider: Any, clock: Any) -> None:
        t = fed_orders(provider)
        t.load([{"region": "eu", "id": 1}, {"region": "eu", "id": 2}], ttl=SHORT)
        t.upsert({"region": "eu", "id": 3})
        clock.advance(SHORT + 0.15)
        before = provider.revision()
        provider.admin.drop(
            _overwrite(provider, [{"region": "eu", "id": 2}, {"region": "eu", "id": 4}], keep_versions=False)
        )
        events = list(provider.changes("orders", since=before))
        assert {e.revision for e in events} == {provider.revision()}
        assert [(e.op, e.key["id"], e.created) for e in events if e.op != "expire"] == [
            ("put", 2, True),
            ("delete", 3, None),
            ("put", 4, True),
        ]
        expired = [e.key["id"] for e in events if e.op == "expire"]
        assert expired in ([], [1], [2], [1, 2])  # unless a background sweep took them first
        if 2 in expired:
            assert [e.op for e in events if e.key["id"] == 2] == ["expire", "put"]
        assert _applied(provider.changes("orders")) == _state(t.scan())
