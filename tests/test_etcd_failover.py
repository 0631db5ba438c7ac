"""Failover on the etcd provider: a killed leader, a cluster without quorum, a
restarted cluster (the session's 3-member cluster, tests/etcd_cluster.py; each test
restarts every member it killed), and a leader cut off by a network partition (a
cluster of its own behind bench/chaos.py's loopback proxies)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cli_support import until
from conftest import need

import spi
from spi.errors import ProviderUnavailableError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("n", "long"), spi.Field("v", "string")], ["k"], ["v"])


@pytest.fixture
def cluster(etcd_cluster: Any) -> Iterator[Any]:
    """The session cluster, healed after the test (members restarted, a leader elected)."""
    if not hasattr(etcd_cluster, "kill"):
        pytest.skip("an external etcd cluster (KVCTL_TEST_ETCD_URL) is not killed by tests")
    yield etcd_cluster
    etcd_cluster.heal()


def _table(factory: Callable[..., Any], **query: str) -> Any:
    p = factory(**query)
    p.admin.create(SPEC)
    t = p.table("t")
    t.load([{"k": i, "n": 0, "v": "a"} for i in range(20)])
    return p, t


def test_calls_continue_when_the_leader_dies(cluster: Any, etcd_factory: Callable[..., Any]) -> None:
    p, t = _table(etcd_factory)
    leader = cluster.wait_leader()
    cluster.kill(leader)
    assert t.read((3,))["n"] == 0 and t.count() == 20  # reads move to a live member at once
    cluster.wait_leader()
    for _ in range(10):
        p.run(lambda tx: tx.table("t").increment((1,), "n"))
    t.upsert({"k": 100, "n": 1, "v": "b"})
    assert t.read((1,))["n"] == 10 and t.count() == 21 and p.admin.verify("t") == []


@pytest.mark.timing
def test_without_quorum_calls_fail_within_the_timeout_and_write_nothing(
    cluster: Any, etcd_factory: Callable[..., Any]
) -> None:
    p, t = _table(etcd_factory, timeout="1.5")
    leader = cluster.wait_leader()
    for i in ((leader + 1) % 3, leader):  # a follower, then the leader
        cluster.kill(i)
    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError, match="no quorum"):
        t.update_range(changes={"v": "half"})
    assert time.monotonic() - started < 4
    cluster.heal()
    assert t.count() == 20 and t.count(where=spi.col("v") == "half") == 0
    t.update_range(changes={"v": "whole"})  # works again
    assert t.count(where=spi.col("v") == "whole") == 20 and p.admin.verify("t") == []


def test_a_commit_sent_without_quorum_lands_whole_or_not_at_all(cluster: Any, etcd_factory: Callable[..., Any]) -> None:
    p, t = _table(etcd_factory, timeout="1.5")
    tx = p.transaction()
    for r in list(tx.table("t").scan()):
        tx.table("t").update((r["k"],), {"v": "new", "n": 1})
    leader = cluster.wait_leader()
    for i in [m for m in range(3) if m != leader]:
        cluster.kill(i)
    with pytest.raises(ProviderUnavailableError, match="quorum"):
        tx.__exit__(None, None, None)  # the commit
    cluster.heal()
    changed = t.count(where=spi.col("v") == "new")
    assert changed in (0, 20) and t.count(where=spi.col("n") == 1) == changed
    assert p.admin.verify("t") == []


def test_the_cli_exits_3_without_quorum(cluster: Any, etcd_factory: Callable[..., Any]) -> None:
    p, _ = _table(etcd_factory)
    url = f"{p.url}?timeout=1"
    for i in range(3):
        if i != cluster.wait_leader():
            cluster.kill(i)
            break
    cluster.kill(cluster.wait_leader())
    env = {**os.environ, "KVCTL_URL": url}
    done = subprocess.run(
        [sys.executable, "-m", "kvctl", "put", "t", '{"k": 1, "n": 5, "v": "x"}'],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "quorum" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_bulk_load_survives_a_killed_leader_batch_by_batch(cluster: Any, etcd_factory: Callable[..., Any]) -> None:
    """SIGKILL of the leader during a load: every batch the load acknowledged is
    there, and no batch is there in part (each is one etcd transaction)."""
    p = etcd_factory()
    p.admin.create(SPEC)
    t = p.table("t")
    batch, total = 40, 2400  # 40 rows fit one etcd transaction at its default 128 operations
    acknowledged: list[int] = []
    failure: list[BaseException] = []

    def load() -> None:
        try:
            t.load(({"k": i, "n": i, "v": "x"} for i in range(total)), batch_size=batch, progress=acknowledged.append)
        except ProviderUnavailableError as exc:  # a commit without an answer: landed whole or not at all
            failure.append(exc)

    worker = threading.Thread(target=load)
    worker.start()
    while not acknowledged and worker.is_alive():
        time.sleep(0.005)
    cluster.kill(cluster.wait_leader())  # SIGKILL by pid
    worker.join(60)
    cluster.heal()
    done = acknowledged[-1] if acknowledged else 0
    assert done > 0 and (failure or done == total)
    present = sorted(r["k"] for r in t.scan())
    assert present[:done] == list(range(done))  # every acknowledged batch
    assert len(present) % batch == 0 and present == list(range(len(present)))  # none partial
    assert t.count() == len(present) and p.admin.verify("t") == []


WRITER = """
import sys, spi
from spi.errors import ProviderUnavailableError
p = spi.connect(sys.argv[1])
t = p.table("w")
for i in range(int(sys.argv[2])):
    for _ in range(5):  # a commit left unanswered by a dying leader landed whole or not at all
        try:
            t.upsert({"k": i, "n": i, "v": "w"})
            break
        except ProviderUnavailableError:
            try:
                if t.read((i,)) is not None:
                    break
            except ProviderUnavailableError:
                pass
    else:
        sys.exit(f"row {i} not written")
"""


def _watch_while_killing(p: Any, cluster: Any, n: int, victim: Callable[[], int]) -> int:
    """Watch a new change-fed table ``w`` of ``p`` while a writer process upserts
    ``n`` rows, SIGKILLing member ``victim()`` after a third of the events: every
    event arrives once, in revision order (no gap, no repeat). The member killed."""
    p.admin.create(spi.TableSpec("w", SPEC.fields, ["k"], changes=True))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, p.url, str(n)], cwd=ROOT, env=_env())
    seen: list[Any] = []
    killed = -1
    try:
        for change in p.watch("w", since=0, timeout=60):
            seen.append(change)
            if len(seen) == n // 3:
                killed = victim()
                cluster.kill(killed)  # SIGKILL by pid
            if len(seen) == n:
                break
        assert writer.wait(60) == 0
    finally:
        writer.kill()
    assert [c.key["k"] for c in seen] == list(range(n))
    revisions = [c.revision for c in seen]
    assert revisions == list(range(revisions[0], revisions[0] + n))
    return killed


def test_a_watch_fed_by_another_process_survives_a_killed_leader(
    cluster: Any, etcd_factory: Callable[..., Any]
) -> None:
    """A watch here while a writer process writes and the leader is SIGKILLed."""
    _watch_while_killing(etcd_factory(), cluster, 150, cluster.wait_leader)


def test_the_watch_stream_moves_to_another_member_when_its_member_dies(
    cluster: Any, etcd_factory: Callable[..., Any]
) -> None:
    """What wakes a watch is etcd's own watch on one member: SIGKILL that member while
    another process writes; the stream reconnects elsewhere (counted)."""
    p = etcd_factory()

    def streaming() -> int:
        member = p._etcd.watch.member
        assert member is not None  # the stream is open: the watch is woken by etcd
        return int(member)

    killed = _watch_while_killing(p, cluster, 90, streaming)
    assert p.stats()["watch_reconnects"] >= 1 and p._etcd.watch.member not in (None, killed)


INCREMENTER = """
import sys, time, spi
p = spi.connect(sys.argv[1])
t = p.table("t")
t.read((1,))
time.sleep(max(0.0, float(sys.argv[3]) - time.time()))  # every process starts at once
for _ in range(int(sys.argv[2])):
    t.increment((1,), "n")
print(p.stats()["conflict_retries"])
"""


def test_processes_incrementing_one_key_get_the_exact_total(etcd_factory: Callable[..., Any]) -> None:
    """4 processes increment one row at once: conflicts are retried, none is lost."""
    p, t = _table(etcd_factory)
    each = 25
    start = str(time.time() + 5)  # after the processes' start-up, which would otherwise run them one by one
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", INCREMENTER, p.url, str(each), start], cwd=ROOT, env=_env(), stdout=subprocess.PIPE
        )
        for _ in range(4)
    ]
    retries = 0
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        retries += int(out.decode().strip() or 0)
    assert t.read((1,))["n"] == 4 * each and retries > 0  # they did meet each other


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture
def proxied() -> Iterator[Any]:
    """A 3-member cluster of its own whose traffic goes through loopback proxies
    (bench/chaos_proxy.py), so that a member can be cut off; stopped after the test."""
    from bench.chaos_proxy import ProxiedEtcd

    binary = shutil.which("etcd")
    need("etcd", binary is not None, "no etcd binary found (run scripts/ensure-etcd.sh)")
    assert binary is not None
    cluster = ProxiedEtcd(binary).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_a_partitioned_leader_is_replaced_and_catches_up(proxied: Any) -> None:
    """The leader cut off from its peers and clients: writes go on through the others
    (a new leader), a client that reaches only the cut member is told it is
    unavailable, and once healed that member serves every acknowledged write.

    The client runs at the default timeout (5 s): a stock cluster needs one to two
    election timeouts (1 s each) to elect a new leader, more on a busy machine, and a
    shorter timeout failed here while the election was still under way."""
    p = spi.connect(f"{proxied.proxied_url}/part")
    try:
        p.admin.create(SPEC)
        t = p.table("t")
        t.load([{"k": i, "n": 0, "v": "a"} for i in range(20)])
        cut = proxied.wait_leader()
        proxied.partition(cut)
        for _ in range(10):
            p.run(lambda tx: tx.table("t").increment((1,), "n"))
        t.upsert({"k": 100, "n": 1, "v": "b"})
        alone = f"etcd://127.0.0.1:{proxied.client_proxies[cut].listen}/part"
        with spi.connect(f"{alone}?timeout=1") as q, pytest.raises(ProviderUnavailableError):
            q.table("t").read((1,))
        proxied.heal_partition(cut)
        with spi.connect(alone) as q:

            def caught_up() -> bool:
                try:
                    return bool(q.table("t").read((1,))["n"] == 10 and q.table("t").count() == 21)
                except ProviderUnavailableError:  # still rejoining
                    return False

            assert until(caught_up, 30)
            assert q.admin.verify("t") == []
    finally:
        p.close()
