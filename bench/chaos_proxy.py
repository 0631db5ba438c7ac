"""Loopback TCP proxies for the chaos campaign's etcd network partitions.

Every member of the campaign's cluster (:class:`ProxiedEtcd`) listens on ports of
its own and advertises, to its peers and to clients, the ports of proxies in front
of them; the proxies run in one asyncio loop of a background thread
(:class:`ProxyHub`). Partitioning member ``i`` then means:

- its client proxy and its peer proxy stop listening and close every connection
  through them (new connections are refused, as by a host that is gone);
- the other members' peer proxies close the connections member ``i`` opened to them
  and refuse its new ones. A connection's origin is read from the first request on
  it: etcd's peer requests (raft streams, pipelined messages, snapshots) carry the
  sender's member id in an ``X-Server-From`` header, and one TCP connection always
  comes from one member.

Restoring opens everything again. Connections whose first request names no member
(version probes) are passed through.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from etcd_cluster import ThrowawayEtcd, free_port, post

T = TypeVar("T")
_FROM = re.compile(rb"\r\nx-server-from:\s*([0-9a-f]+)\s*\r\n", re.IGNORECASE)
_HEAD_LIMIT = 16384
"""Bytes of a connection's start read while looking for the end of the first request head."""
_SNIFF_SECONDS = 5.0


class Proxy:
    """One listening port forwarding to one target port (both on 127.0.0.1)."""

    def __init__(self, listen: int, target: int, *, sniff: bool) -> None:
        self.listen = listen
        self.target = target
        self.sniff = sniff
        """Whether the origin of each connection is read from its first request."""
        self.server: asyncio.Server | None = None
        self.connections: dict[asyncio.StreamWriter, str] = {}
        """Every open connection's two writers (client side, target side) -> its origin ("" unknown)."""


class ProxyHub:
    """Proxies served by one event loop in a thread of their own; the methods are
    called from other threads and return once the loop has done the work."""

    def __init__(self) -> None:
        self.proxies: list[Proxy] = []
        self.blocked: set[str] = set()
        """Member ids whose connections the sniffing proxies refuse."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="chaos-proxies", daemon=True)
        self._thread.start()

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(30)

    def add(self, listen: int, target: int, *, sniff: bool = False) -> Proxy:
        """Start forwarding ``listen`` to ``target``."""
        proxy = Proxy(listen, target, sniff=sniff)
        self.proxies.append(proxy)
        self._call(self._open(proxy))
        return proxy

    def cut(self, proxy: Proxy) -> None:
        """Stop listening on ``proxy`` and close its connections."""
        self._call(self._cut(proxy))

    def restore(self, proxy: Proxy) -> None:
        """Listen on ``proxy`` again (a no-op when it listens)."""
        self._call(self._open(proxy))

    def block(self, member: str) -> None:
        """Close the sniffing proxies' connections from ``member`` and refuse its new ones."""
        self._call(self._block(member))

    def unblock(self, member: str) -> None:
        """Let ``member``'s connections through again."""
        self.blocked.discard(member)

    def close(self) -> None:
        """Close every proxy and stop the loop."""
        for proxy in self.proxies:
            self.cut(proxy)
        self._call(self._finish_tasks())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _open(self, proxy: Proxy) -> None:
        if proxy.server is None:

            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await self._serve(proxy, reader, writer)

            proxy.server = await asyncio.start_server(handle, "127.0.0.1", proxy.listen, reuse_address=True)

    async def _cut(self, proxy: Proxy) -> None:
        if proxy.server is not None:
            proxy.server.close()
            proxy.server = None
        for writer in list(proxy.connections):
            _abort(writer)

    async def _finish_tasks(self) -> None:
        """Cancel the connections' tasks (every connection is closed by now)."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _block(self, member: str) -> None:
        self.blocked.add(member)
        for proxy in self.proxies:
            for writer, origin in list(proxy.connections.items()):
                if origin == member:
                    _abort(writer)

    async def _serve(self, proxy: Proxy, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = b""
        origin = ""
        if proxy.sniff:
            with contextlib.suppress(
                OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError
            ):
                head = await asyncio.wait_for(_request_head(reader), _SNIFF_SECONDS)
            found = _FROM.search(head)
            origin = found.group(1).decode() if found else ""
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", proxy.target)
        except OSError:
            _abort(writer)
            return
        if proxy.server is None or origin in self.blocked:  # cut while this connection started
            for side in (writer, up_writer):
                _abort(side)
            return
        proxy.connections[writer] = origin
        proxy.connections[up_writer] = origin
        try:
            if head:
                up_writer.write(head)
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        finally:
            for side in (writer, up_writer):
                proxy.connections.pop(side, None)
                _abort(side)


async def _request_head(reader: asyncio.StreamReader) -> bytes:
    """The bytes of a connection up to the end of its first request head (or what
    came before the limit or the end)."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < _HEAD_LIMIT:
        chunk = await reader.read(_HEAD_LIMIT - len(data))
        if not chunk:
            break
        data += chunk
    return data


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until either side ends, then close both."""
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        _abort(writer)


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close a connection at once (a reset, not a polite shutdown)."""
    transport = writer.transport
    if not transport.is_closing():
        transport.abort()


class ProxiedEtcd(ThrowawayEtcd):
    """A :class:`ThrowawayEtcd` whose members advertise proxy ports (see the module's
    docstring): :attr:`proxied_url` goes through the proxies, :attr:`url` (used to
    watch the cluster from outside) does not."""

    def __init__(self, binary: str) -> None:
        super().__init__(binary)
        self.hub = ProxyHub()
        self.client_proxies: list[Proxy] = []
        self.peer_proxies: list[Proxy] = []
        self.member_ids: list[str] = []
        """Each member's id as etcd spells it in peer requests (hex)."""

    def choose_ports(self) -> tuple[list[int], list[int]]:
        """The members' own ports, and a proxy in front of each (started here, before
        the members, which dial their peers through them)."""
        ports: set[int] = set()
        while len(ports) < 4 * self.members:
            ports.add(free_port())
        listed = sorted(ports)
        n = self.members
        clients, peers, fronts = listed[:n], listed[n : 2 * n], listed[2 * n :]
        self.client_proxies = [self.hub.add(fronts[i], clients[i]) for i in range(n)]
        self.peer_proxies = [self.hub.add(fronts[n + i], peers[i], sniff=True) for i in range(n)]
        return clients, peers

    def advertised(self, i: int) -> tuple[int, int]:
        """The ports of member ``i``'s proxies."""
        return self.client_proxies[i].listen, self.peer_proxies[i].listen

    def start(self) -> ProxiedEtcd:
        """Start the proxies and the members, and learn the members' ids."""
        super().start()
        listing = post(self.endpoints[0], "/v3/cluster/member/list", {})
        by_name = {m["name"]: format(int(m["ID"]), "x") for m in listing["members"]}
        self.member_ids = [by_name[f"m{i}"] for i in range(self.members)]
        return self

    @property
    def proxied_url(self) -> str:
        """A provider URL naming every member's client proxy."""
        return "etcd://" + ",".join(f"127.0.0.1:{p.listen}" for p in self.client_proxies)

    def partition(self, i: int) -> None:
        """Cut member ``i`` off from its peers and from clients."""
        self.hub.cut(self.client_proxies[i])
        self.hub.cut(self.peer_proxies[i])
        self.hub.block(self.member_ids[i])

    def heal_partition(self, i: int) -> None:
        """Undo :meth:`partition`."""
        self.hub.unblock(self.member_ids[i])
        self.hub.restore(self.peer_proxies[i])
        self.hub.restore(self.client_proxies[i])

    def stop(self) -> None:
        """Stop the members, then the proxies."""
        super().stop()
        self.hub.close()
