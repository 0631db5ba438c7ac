"""Several processes on one store, and data that outlives the provider object."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

import spi
from spi.capabilities import Capability
from spi.spec import TableSpec
from spi.testing.conformance.changes import FED_COUNTERS
from spi.testing.conformance.races import RACES, check_race, prepare_race
from spi.testing.conformance.threads import one_increment_per_event
from spi.testing.fixtures import COUNTERS, ORDERS, order_rows
from spi.testing.requirements import requires

_INCREMENTS = textwrap.dedent(
    """
    import sys, spi
    with spi.connect(sys.argv[1]) as p:
        t = p.table("counters")
        for _ in range(int(sys.argv[2])):
            t.increment(("hits",), "n", 1)
    """
)
# A racer: opens the store, says "ready", waits for a line on stdin (all racers are
# released at once), runs its conditional write and prints whether it won.
_RACER = textwrap.dedent(
    """
    import sys, spi
    from spi.testing.conformance.races import attempt_race
    url, race, owner = sys.argv[1:4]
    with spi.connect(url) as p:
        t = p.table("counters")
        t.read(("warm-up",))
        print("ready", flush=True)
        sys.stdin.readline()
        print("won" if attempt_race(t, race, owner) else "lost", flush=True)
    """
)
RACERS = 4


@requires(Capability.PROCESSES)
class ProcessTests:
    """Processes opening the same URL see each other's commits and never lose an update."""

    def test_concurrent_increments_from_processes(self, provider: Any, provider_url: str) -> None:
        self._increment_from_processes(provider, provider_url, COUNTERS)

    @requires(Capability.CHANGES)
    def test_concurrent_increments_from_processes_record_one_event_each(self, provider: Any, provider_url: str) -> None:
        total = self._increment_from_processes(provider, provider_url, FED_COUNTERS)
        one_increment_per_event(provider, total)

    def _increment_from_processes(self, provider: Any, provider_url: str, spec: TableSpec) -> int:
        """4 processes increment one key 40 times each: the exact total; returns it."""
        provider.admin.create(spec)
        workers, each = 4, 40
        procs = [
            subprocess.Popen([sys.executable, "-c", _INCREMENTS, provider_url, str(each)], stderr=subprocess.PIPE)
            for _ in range(workers)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode(errors="replace")
        assert provider.table("counters").read(("hits",))["n"] == workers * each
        return workers * each

    @pytest.mark.parametrize("race", RACES)
    def test_conditional_writes_from_processes_have_one_winner(
        self, provider: Any, provider_url: str, race: str
    ) -> None:
        provider.admin.create(COUNTERS)
        prepare_race(provider.table("counters"), race)
        owners = [f"p{i}" for i in range(RACERS)]
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _RACER, provider_url, race, owner],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for owner in owners
        ]
        outcomes: dict[str, bool] = {}
        try:
            for proc in procs:
                assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            for owner, proc in zip(owners, procs, strict=True):
                out, err = proc.communicate(timeout=120)
                assert proc.returncode == 0, err
                outcomes[owner] = out.strip() == "won"
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
        check_race(provider.table("counters"), race, outcomes)

    def test_commit_is_visible_to_another_process(self, provider: Any, provider_url: str) -> None:
        provider.admin.create(ORDERS)
        provider.table("orders").upsert({"region": "eu", "id": 1, "status": "sent"})
        script = "import sys, spi; p = spi.connect(sys.argv[1]); print(p.table('orders').read(('eu', 1))['status'])"
        out = subprocess.run(
            [sys.executable, "-c", script, provider_url], capture_output=True, text=True, timeout=60, check=True
        )
        assert out.stdout.strip() == "sent"


@requires(Capability.DURABLE)
class DurabilityTests:
    """What was committed is there after closing the provider and opening its URL again."""

    def test_data_survives_reopening(self, provider: Any, provider_url: str, orders: Any) -> None:
        before = [(dict(r), r.version) for r in orders.scan()]
        orders.update(("eu", -5), {"note": "kept"})
        provider.close()
        with spi.connect(provider_url) as again:
            assert again.admin.get_spec("orders") == ORDERS
            rows = {(r["region"], r["id"]): (dict(r), r.version) for r in again.table("orders").scan()}
        assert len(rows) == len(order_rows()) == len(before)
        assert rows[("eu", -5)][0]["note"] == "kept" and rows[("eu", -5)][1] == 2
        assert all(rows[(r["region"], r["id"])] == (r, v) for r, v in before if (r["region"], r["id"]) != ("eu", -5))
