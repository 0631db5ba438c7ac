"""Noticing a server that stops answering while a statement is in flight: :class:`Watchdog`.

A hung server (stopped, or stuck on its storage) still has a kernel that acknowledges
every packet: TCP keepalives are answered, a server-side ``statement_timeout`` never
fires, and psycopg sets no limit on how long a statement may take. So the watchdog
looks at the provider's connections from a thread of its own: a connection with a
statement in flight (psycopg's ``ACTIVE``) whose socket has received nothing for
:data:`STALL` seconds (Linux ``TCP_INFO``) makes it try a new connection to the
server. A live server answers that (a long statement, a lock wait: it then checks
again after twice the silence, at most :data:`MAX_INTERVAL` later); a server that
does not within ``connect_timeout`` is hung, and the watchdog shuts down the sockets
of every connection it watches. The waiting statements then fail at once, and the
provider reports :meth:`Watchdog.verdict` instead of "server closed the connection".

Only TCP connections on Linux are watched (a Unix-domain socket has no ``TCP_INFO``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import struct
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

STALL = 2.0
"""Seconds a statement's connection may receive nothing before the server is checked."""
MAX_INTERVAL = 60.0
"""At most this many seconds between two checks of a live server for one long statement."""
SAMPLE = 0.25
"""Seconds between two looks at the connections."""
_TCP_INFO: int = getattr(socket, "TCP_INFO", 0)
"""Linux's getsockopt option (0 elsewhere: nothing is watched)."""
_TCP_ESTABLISHED = 1
_TCP_INFO_FIELDS = struct.Struct("B43xI")
"""``struct tcp_info`` (linux/tcp.h, a stable ABI): ``tcpi_state`` at 0 and
``tcpi_last_data_recv`` (milliseconds since data last arrived) at 52."""


@dataclass
class _Watched:
    """One connection: a weak reference to it and a duplicate of its socket (shutting
    that down ends a wait on the connection; psycopg's own descriptor is never used
    from this thread)."""

    conn: weakref.ref[psycopg.Connection[Any]]
    sock: socket.socket
    check_after: float = STALL
    last_silence: float = 0.0

    def stalled(self) -> bool | None:
        """Whether a statement has waited ``check_after`` seconds without a byte from
        the server; None once the connection is closed or gone. (psycopg's status
        reads are safe while another thread uses the connection.)"""
        import psycopg.pq

        conn = self.conn()
        if conn is None or conn.closed:
            return None
        try:
            state, silence_ms = _TCP_INFO_FIELDS.unpack_from(self.sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, 104))
        except OSError:
            return None
        if state != _TCP_ESTABLISHED:
            return None
        silence = silence_ms / 1000
        active = conn.info.transaction_status == psycopg.pq.TransactionStatus.ACTIVE
        if not active or silence < self.last_silence:
            self.check_after = STALL  # idle, or the server has sent something since
        self.last_silence = silence
        return active and silence >= self.check_after

    def answered(self) -> None:
        """The server answered a check: look again after twice this silence."""
        self.check_after = min(2 * self.last_silence, self.last_silence + MAX_INTERVAL)


class Watchdog:
    """Watches one provider's connections to one server (see the module docs)."""

    def __init__(self, probe_info: Callable[[], str], connect_timeout: int, where: str) -> None:
        """``probe_info`` gives the libpq connection string of a check (it holds the
        password: never shown); ``where`` is the masked URL for messages."""
        self._probe_info = probe_info
        self._connect_timeout = connect_timeout
        self._where = where
        self._lock = threading.Lock()
        self._watched: dict[int, _Watched] = {}
        self._keys = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._verdict: str | None = None

    def verdict(self) -> str | None:
        """Why the watchdog cut the connections, until a new connection succeeds."""
        return self._verdict

    def watch(self, conn: psycopg.Connection[Any]) -> None:
        """Watch a new connection (a SQLAlchemy pool ``connect`` event)."""
        self._verdict = None  # the server has just answered a connection
        if not _TCP_INFO:
            return
        try:
            sock = socket.socket(fileno=os.dup(conn.fileno()))
        except OSError:
            return  # out of descriptors: this connection goes unwatched
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            sock.close()
            return
        with self._lock:
            if self._closed:
                sock.close()
                return
            key = next(self._keys)
            self._watched[key] = _Watched(weakref.ref(conn), sock)
            weakref.finalize(conn, self._forget, key)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kvctl-postgres-watchdog", daemon=True)
                self._thread.start()

    def _forget(self, key: int) -> None:
        with self._lock:
            watched = self._watched.pop(key, None)
        if watched is not None:
            watched.sock.close()

    def _run(self) -> None:
        while True:
            time.sleep(SAMPLE)
            with self._lock:
                if self._closed or not self._watched:
                    self._thread = None  # the next watch() starts another
                    return
                watched = list(self._watched.items())
            stalled = []
            for key, entry in watched:
                state = entry.stalled()
                if state is None:
                    self._forget(key)
                elif state:
                    stalled.append(entry)
            if not stalled:
                continue
            if self._server_answers():
                for entry in stalled:
                    entry.answered()
            else:
                self._cut(stalled[0].last_silence)

    def _server_answers(self) -> bool:
        """Whether the server answers a new connection within ``connect_timeout``
        (even a refusal is an answer)."""
        import psycopg

        try:
            psycopg.connect(self._probe_info(), autocommit=True).close()
        except psycopg.errors.ConnectionTimeout:
            return False
        except psycopg.Error:
            pass
        return True

    def _cut(self, silence: float) -> None:
        """Shut down every watched socket: the waits on them end with an error."""
        within = f" within {self._connect_timeout} s" if self._connect_timeout else ""
        self._verdict = (
            f"PostgreSQL at {self._where} stopped answering: a statement got no reply for {silence:.0f} s"
            f" and a new connection none{within}"
        )
        with self._lock:
            watched, self._watched = self._watched, {}
        for entry in watched.values():
            with contextlib.suppress(OSError):
                entry.sock.shutdown(socket.SHUT_RDWR)
            entry.sock.close()

    def close(self) -> None:
        """Stop watching (the thread ends within :data:`SAMPLE` seconds)."""
        with self._lock:
            self._closed = True
            watched, self._watched = self._watched, {}
        for entry in watched.values():
            entry.sock.close()


__all__ = ["Watchdog"]
