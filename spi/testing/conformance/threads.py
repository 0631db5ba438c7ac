"""One provider used from many threads: exact counters (and change feeds), one winner
of every conditional write, consistent scans."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from spi.capabilities import Capability
from spi.spec import TableSpec
from spi.testing.conformance.changes import FED_COUNTERS
from spi.testing.conformance.races import RACES, attempt_race, check_race, prepare_race
from spi.testing.fixtures import COUNTERS
from spi.testing.requirements import requires

RACERS = 8


def one_increment_per_event(provider: Any, total: int) -> None:
    """The feed of COUNTERS holds exactly one event per increment of ("hits",), in
    commit order: versions 1 to ``total`` under increasing revisions."""
    events = list(provider.changes("counters"))
    assert [(e.op, e.key, e.version) for e in events] == [("put", {"name": "hits"}, v) for v in range(1, total + 1)]
    assert [e.row["n"] for e in events] == list(range(1, total + 1))
    revisions = [e.revision for e in events]
    assert revisions == sorted(set(revisions))


@requires(Capability.THREADS)
class ThreadTests:
    """One provider used from many threads: exact counters (and change feeds), one
    winner of every conditional write, consistent scans."""

    def test_concurrent_increments(self, provider: Any) -> None:
        self._increment_from_threads(provider, COUNTERS)

    @requires(Capability.CHANGES)
    def test_concurrent_increments_record_one_event_each(self, provider: Any) -> None:
        self._increment_from_threads(provider, FED_COUNTERS)
        one_increment_per_event(provider, 20)

    def _increment_from_threads(self, provider: Any, spec: TableSpec) -> None:
        provider.admin.create(spec)
        t = provider.table("counters")
        errors: list[BaseException] = []

        def work() -> None:
            try:
                t.increment(("hits",), "n", 1)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(20)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == [] and t.read(("hits",))["n"] == 20

    def test_concurrent_cas_one_winner(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        results: list[bool] = []
        barrier = threading.Barrier(20)

        def work(i: int) -> None:
            barrier.wait()
            results.append(t.compare_and_swap(("lock",), "owner", None, f"w{i}"))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sorted(results) == [False] * 19 + [True]
        assert t.read(("lock",))["owner"].startswith("w")

    @pytest.mark.parametrize("race", RACES)
    def test_concurrent_conditional_writes_have_one_winner(self, provider: Any, race: str) -> None:
        provider.admin.create(COUNTERS)
        prepare_race(provider.table("counters"), race)
        outcomes: dict[str, bool] = {}
        errors: list[BaseException] = []
        barrier = threading.Barrier(RACERS)

        def work(owner: str) -> None:
            t = provider.table("counters")
            barrier.wait()
            try:
                outcomes[owner] = attempt_race(t, race, owner)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(RACERS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        check_race(provider.table("counters"), race, outcomes)

    def test_concurrent_scans_see_consistent_rows(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
        t = provider.table("counters")
        t.load({"name": f"a{i:03d}", "n": 0} for i in range(50))
        stop = threading.Event()
        bad: list[Any] = []

        def writer() -> None:
            # Moves one unit between two rows per transaction: the sum stays 0.
            i = 0
            while not stop.is_set():

                def move(tx: Any, i: int = i) -> None:
                    tt = tx.table("counters")
                    tt.increment((f"a{i % 50:03d}",), "n", 1)
                    tt.increment((f"a{(i + 7) % 50:03d}",), "n", -1)

                provider.run(move)
                i += 1

        def reader() -> None:
            for _ in range(15):
                with provider.transaction() as tx:
                    total = sum(r["n"] for r in tx.table("counters").scan())
                if total != 0:
                    bad.append(total)

        w = threading.Thread(target=writer)
        readers = [threading.Thread(target=reader) for _ in range(3)]
        w.start()
        for r in readers:
            r.start()
        for r in readers:
            r.join()
        stop.set()
        w.join()
        assert bad == []
