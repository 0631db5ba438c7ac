"""Several processes on one store, and data that outlives the provider object."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import spi
from spi.capabilities import Capability
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


@requires(Capability.PROCESSES)
class ProcessTests:
    """Processes opening the same URL see each other's commits and never lose an update."""

    def test_concurrent_increments_from_processes(self, provider: Any, provider_url: str) -> None:
        provider.admin.create(COUNTERS)
        workers, each = 3, 40
        procs = [
            subprocess.Popen([sys.executable, "-c", _INCREMENTS, provider_url, str(each)], stderr=subprocess.PIPE)
            for _ in range(workers)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode(errors="replace")
        assert provider.table("counters").read(("hits",))["n"] == workers * each

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
