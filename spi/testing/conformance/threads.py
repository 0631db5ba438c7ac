"""One provider used from many threads: exact counters, one CAS winner, consistent scans."""

from __future__ import annotations

import threading
from typing import Any

from spi.capabilities import Capability
from spi.testing.fixtures import COUNTERS
from spi.testing.requirements import requires


@requires(Capability.THREADS)
class ThreadTests:
    """One provider used from many threads: exact counters, one CAS winner, consistent scans."""

    def test_concurrent_increments(self, provider: Any) -> None:
        provider.admin.create(COUNTERS)
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
