"""Exclusive, short-lived access to one RocksDB directory, shared within a process.

Every provider on the same real path in a process shares one :class:`PathHandle`.
A transaction takes the handle (threads wait on a condition), then — unless the
handle is still open from a moment ago — an ``flock`` on ``kvctl.lock`` in the
directory (other processes), then opens the ``Rdict``. Waiting is bounded by the
busy timeout. When the transaction ends the database stays open for at most
:data:`LINGER` seconds of idleness (so back-to-back transactions and the batches
of a bulk load do not pay the ~10 ms open), then a background thread closes it
and unlocks the file — at once if another process is waiting.

A process that waits for the lock holds a shared ``flock`` on ``kvctl.wait``; a
holder that sees it (and has held the path for :data:`QUANTUM` seconds) closes at
the end of its current transaction and lets the waiter in before competing again.

Change-feed watchers must not hold the path while they wait, so a commit that takes
a revision writes it into ``kvctl.rev`` (still holding the lock, so the file only
moves forward; through a shared memory map of the file, which costs no system call)
and notifies this process's watchers; watchers in other processes read the file every
:data:`ANNOUNCE_POLL` seconds and take a session only when it changed.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import logging
import mmap
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from threading import get_ident
from time import monotonic
from typing import Any, TypeVar

from spi.errors import KvError, ProviderUnavailableError
from spi.kv.store import STALE, Stale
from spi.stats import Counters

T = TypeVar("T")
log = logging.getLogger(__name__)

LINGER = 0.25
"""Seconds an idle open database is kept before it is closed and unlocked (sooner
when another process is waiting for it: the linger thread checks every
:data:`WAITER_CHECK` seconds)."""
WAITER_CHECK = 0.01
QUANTUM = 0.05
"""Seconds a process may keep the path across back-to-back transactions while
another process is waiting for it."""
LOCK_NAME = "kvctl.lock"
WAIT_NAME = "kvctl.wait"
REVISION_NAME = "kvctl.rev"
PRIVATE_DIRECTORY = 0o700
"""The mode of a database directory kvctl creates: only its owner may enter it."""
PRIVATE_FILE = 0o600
"""The mode of kvctl's files in a database directory, and of RocksDB's at creation."""
ANNOUNCE_POLL = 0.02
"""Seconds between two reads of ``kvctl.rev`` by a waiting watcher."""
_POLITE_MAX = 0.5
_MAX_POLL = 0.02

_handles: dict[str, PathHandle] = {}
_handles_lock = threading.Lock()


def handle_for(path: str) -> PathHandle:
    """The process-wide handle of the database directory ``path``."""
    real = os.path.realpath(path)
    with _handles_lock:
        handle = _handles.get(real)
        if handle is None:
            handle = _handles[real] = PathHandle(real)
        return handle


@atexit.register
def _close_all() -> None:
    for handle in list(_handles.values()):
        handle.close_if_idle()


def driver_error(exc: Exception, doing: str, path: str) -> KvError:
    """A one-line spi error for a rocksdict exception (IO and corruption: unavailable)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    message = f"rocksdb {path}: {doing} failed: {text}"
    lowered = text.lower()
    if any(w in lowered for w in ("io error", "corruption", "permission", "no space", "closed", "os error")):
        return ProviderUnavailableError(message)
    return KvError(message)


def _busy(path: str, timeout: float) -> ProviderUnavailableError:
    return ProviderUnavailableError(
        f"rocksdb database {path} is busy: another transaction or process held it for more than "
        f"{timeout:g} s (raise ?busy_timeout= to wait longer)"
    )


class PathHandle:
    """One database directory as this process sees it: at most one transaction at a
    time, the ``Rdict`` open only while in use (plus a short linger)."""

    def __init__(self, path: str) -> None:
        self.path = path
        # The condition's lock, taken directly on the uncontended path (its C-level
        # context manager costs less than the condition's); never taken twice by one thread.
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._owner: int | None = None
        self._queue: deque[int] = deque()
        self._db: Any = None
        self._lock_fd: int | None = None
        self._wait_fd: int | None = None  # kvctl.wait, kept open with the database: checks cost no open()
        self._revision_map: mmap.mmap | None = None  # kvctl.rev, mapped by the first announcement until closing
        self._announced = threading.Condition()
        self._listeners = 0  # this process's watchers waiting for an announcement
        self._announced_at: tuple[int, int] | None = None  # (generation, revision) of the last announcement
        self._close_on_release = False
        self._idle_since: float | None = None
        self._reaper: threading.Thread | None = None
        self._polite = False
        self._next_waiter_check = 0.0  # see _should_yield
        self._read_only = False  # the open database is in RocksDB's read-only mode
        self.wrote = False
        """True once a session committed to the open database (it is flushed at close)."""
        self.counters = Counters()
        """Lock waits and hand-offs on this directory in this process (``p.stats()``)."""
        self.generation = 0
        """Advanced at every open (another process may have written while the database
        was closed) and by catalog changes (see :meth:`StoreSession.generation`)."""

    # ------------------------------------------------------------------ sessions
    def acquire(self, timeout: float, read_only: bool = False, *, brief: bool = False) -> Any:
        """Exclusive use of the open database, waiting at most ``timeout`` seconds.

        ``read_only``: the session only reads, so a database not open yet is opened in
        RocksDB's read-only mode (about 4 ms instead of 20-60: no new MANIFEST, OPTIONS
        or log file, no sync, no background threads). The ``flock`` is taken all the
        same, so no other kvctl process writes meanwhile. A writing session reopens a
        database that is open read-only.
        ``brief``: a one-off read by a process that then waits (a watcher): if it has
        to open the database, :meth:`release` closes it at once instead of lingering.
        """
        me = get_ident()
        with self._mutex:
            if self._owner is None and not self._queue:
                self._owner = me
            else:
                self._wait_turn(me, monotonic() + timeout, timeout)
        db = self._db
        if db is not None and monotonic() < self._next_waiter_check and (read_only or not self._read_only):
            return db  # open, in the mode asked for, and too soon to look for waiters: the one-off path
        try:
            if self._db is not None and (self._should_yield() or (self._read_only and not read_only)):
                self._close()
            if self._db is None:
                self._open(time.monotonic() + timeout, timeout, read_only)
                self._close_on_release = brief
        except BaseException:
            self._close()
            self._leave()
            raise
        return self._db

    def get_if_idle(self, generation: int, key: bytes) -> bytes | Stale | None:
        """One read without a session (see :meth:`OrderedStore.get_if_idle`)."""
        with self._mutex:
            db = self._idle_db(generation, False)
            if db is None:
                return STALE
            try:
                return db.get(key)  # type: ignore[no-any-return]
            except Exception as exc:
                raise driver_error(exc, "reading", self.path) from None

    def run_if_idle(self, generation: int, fn: Callable[[Any], T]) -> T | Stale:
        """``fn(db)`` for a one-off write without a session (see
        :meth:`OrderedStore.write_if_idle`)."""
        with self._mutex:
            db = self._idle_db(generation, True)
            return STALE if db is None else fn(db)

    def _idle_db(self, generation: int, writing: bool) -> Any:
        """The open database if a call may use it without a session (the caller holds
        the mutex, so no session starts and the linger thread cannot close
        meanwhile): no session runs, ``generation`` is current, the database is open
        (for ``writing``, not read-only) and no other process waits for the path
        (looked for as often as a session does). Counts as use: the idle period
        starts again. None: start a session."""
        db = self._db
        if (
            db is None
            or self._owner is not None
            or self._queue
            or generation != self.generation
            or (writing and self._read_only)
        ):
            return None
        now = monotonic()
        if now >= self._next_waiter_check:
            if self._others_waiting():
                return None  # a session lets the waiting process in (see release)
            self._next_waiter_check = now + WAITER_CHECK
        self._idle_since = now
        return db

    def _wait_turn(self, me: int, deadline: float, timeout: float) -> None:
        """Queue for the handle (the caller holds the mutex); first come, first served:
        :meth:`_leave` hands the handle to the oldest waiter."""
        if self._owner == me:
            raise KvError(
                f"a transaction is already open on rocksdb {self.path} in this thread; "
                "use that transaction instead of opening another one (it would deadlock)"
            )
        self._queue.append(me)
        self.counters.add("lock_waits")
        log.debug("rocksdb %s: waiting for another thread's transaction", self.path)
        while self._owner != me:
            left = deadline - time.monotonic()
            if left <= 0:
                self._queue.remove(me)
                raise _busy(self.path, timeout)
            self._cond.wait(left)

    def release(self) -> None:
        """End the current transaction; close at once if another process waits."""
        try:
            if self._db is not None and (
                self._close_on_release or (monotonic() >= self._next_waiter_check and self._should_yield())
            ):
                self._close()
        finally:
            self._close_on_release = False
            self._leave()

    def close_if_idle(self) -> None:
        """Close the database now unless a transaction is using it."""
        with self._cond:
            if self._owner is None:
                self._close()
                self._cond.notify_all()

    def _leave(self) -> None:
        with self._mutex:
            if self._queue:
                self._owner = self._queue.popleft()
                self._cond.notify_all()
                return
            self._owner = None
            if self._db is not None:
                self._idle_since = monotonic()
                if self._reaper is None:
                    self._reaper = threading.Thread(target=self._reap, name="kvctl-rocksdb-linger", daemon=True)
                    self._reaper.start()

    def _reap(self) -> None:
        """Close the database once it has been idle for LINGER seconds, or at once when
        another process waits for it while it is idle.

        It looks every WAITER_CHECK seconds while the database is open, in use or not:
        a session that ends does not wake it (back-to-back one-off calls would hand the
        interpreter to this thread at every call)."""
        with self._cond:
            while self._db is not None:
                if self._owner is None and self._idle_since is not None:
                    left = self._idle_since + LINGER - monotonic()
                    if left <= 0:
                        self._close()
                        break
                    if self._others_waiting():
                        self._polite = True  # our next open lets the waiting processes in first
                        self._handing_off()
                        self._close()
                        break
                    self._cond.wait(min(left, WAITER_CHECK))
                else:
                    self._cond.wait(WAITER_CHECK)
            self._reaper = None

    # -------------------------------------------------------------- change feeds
    def announce(self, revision: int) -> None:
        """Publish ``revision`` to watchers (the caller holds the open database)."""
        self._announced_at = (self.generation, revision)
        try:
            if self._revision_map is None:
                self._revision_map = _map_revision_file(os.path.join(self.path, REVISION_NAME))
            self._revision_map[:_REVISION_BYTES] = b"%020d" % revision
        except (OSError, ValueError):
            pass  # the commit stands; watchers still look again every few seconds
        if self._listeners:
            with self._announced:
                self._announced.notify_all()

    def known_revision(self) -> int | None:
        """The last revision announced here, if the database stayed open since (no
        other process can have committed one) and no catalog change came between."""
        known = self._announced_at
        return known[1] if known is not None and known[0] == self.generation else None

    def revision_marker(self) -> bytes | None:
        """What ``kvctl.rev`` holds now (None: no revision announced yet)."""
        try:
            fd = os.open(os.path.join(self.path, REVISION_NAME), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            return os.pread(fd, 32, 0)
        finally:
            os.close(fd)

    def wait_for_announcement(self, marker: bytes | None, timeout: float) -> None:
        """Return once ``kvctl.rev`` no longer holds ``marker`` or after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while self.revision_marker() == marker:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with self._announced:
                self._listeners += 1
                try:
                    self._announced.wait(min(left, ANNOUNCE_POLL))
                finally:
                    self._listeners -= 1

    # -------------------------------------------------------------- inter-process
    def _should_yield(self) -> bool:
        # Looking for waiters costs an flock: back-to-back transactions look only after
        # QUANTUM seconds open and then at most every WAITER_CHECK seconds (one deadline,
        # _next_waiter_check), so a waiter gets its turn within QUANTUM + WAITER_CHECK
        # while one-off calls stay cheap.
        now = monotonic()
        if now < self._next_waiter_check:
            return False
        self._next_waiter_check = now + WAITER_CHECK
        if not self._others_waiting():
            return False
        self._polite = True
        self._handing_off()
        return True

    def _handing_off(self) -> None:
        """Count and log closing the database for a process waiting for it."""
        self.counters.add("handoffs")
        log.debug("rocksdb %s: closing for another process waiting for it", self.path)

    def _others_waiting(self) -> bool:
        """True if another process holds ``kvctl.wait`` (it waits for the lock)."""
        fd = self._wait_fd
        if fd is None:
            try:
                fd = os.open(os.path.join(self.path, WAIT_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
            except OSError:
                return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            if fd != self._wait_fd:
                os.close(fd)
        return False

    def _open(self, deadline: float, timeout: float, read_only: bool) -> None:
        self._prepare_directory()
        try:
            fd = os.open(os.path.join(self.path, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
        except OSError as exc:
            raise ProviderUnavailableError(f"rocksdb {self.path}: cannot open the lock file: {exc.strerror}") from None
        self._lock_fd = fd
        if self._polite:
            # We just handed the path over: let the waiting processes take a turn first.
            polite_until = min(deadline, time.monotonic() + _POLITE_MAX)
            while time.monotonic() < polite_until and self._others_waiting():
                time.sleep(0.002)
            self._polite = False
        started = monotonic()
        self._lock_file(fd, deadline, timeout)
        locked = monotonic()
        # Read-only mode cannot create a database: a new path is created read-write.
        exists = os.path.exists(os.path.join(self.path, "CURRENT"))
        self._read_only = read_only and exists
        self._db = self._open_db(deadline, timeout, self._read_only)
        if not exists:
            _make_private(self.path)
        log.debug(
            "rocksdb %s: opened%s in %.1f ms (%.1f ms waiting for the lock)",
            self.path,
            " read-only" if self._read_only else "",
            (monotonic() - started) * 1000,
            (locked - started) * 1000,
        )
        with contextlib.suppress(OSError):
            self._wait_fd = os.open(
                os.path.join(self.path, WAIT_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE
            )
        self.generation += 1
        self._next_waiter_check = monotonic() + QUANTUM

    def _prepare_directory(self) -> None:
        path = self.path
        if os.path.exists(path) and not os.path.isdir(path):
            raise ProviderUnavailableError(
                f"rocksdb {path} exists and is not a directory; a rocksdb: URL names a database directory"
            )
        try:
            os.makedirs(path, PRIVATE_DIRECTORY, exist_ok=True)
            entries = os.listdir(path)
        except OSError as exc:
            raise ProviderUnavailableError(
                f"rocksdb {path}: cannot create the database directory: {exc.strerror}"
            ) from None
        if entries and "CURRENT" not in entries and LOCK_NAME not in entries:
            raise ProviderUnavailableError(
                f"rocksdb {path} is a non-empty directory that is not a RocksDB database; refusing to use it"
            )

    def _lock_file(self, fd: int, deadline: float, timeout: float) -> None:
        waiting: int | None = None
        delay = 0.001
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    pass
                if waiting is None:
                    waiting = os.open(
                        os.path.join(self.path, WAIT_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE
                    )
                    fcntl.flock(waiting, fcntl.LOCK_SH)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _busy(self.path, timeout)
                import random  # only a wait needs it (1 ms of start-up otherwise)

                time.sleep(min(left, delay * random.uniform(0.5, 1.0)))
                delay = min(delay * 1.5, _MAX_POLL)
        finally:
            if waiting is not None:
                os.close(waiting)

    def _open_db(self, deadline: float, timeout: float, read_only: bool) -> Any:
        import rocksdict

        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_keep_log_file_num(2)
        options.set_write_buffer_size(WRITE_BUFFER_BYTES)
        options.set_block_based_table_factory(_table_options())
        options.set_target_file_size_base(TARGET_FILE_BYTES)
        delay = 0.002
        while True:
            try:
                # Naming the default column family's options: otherwise rocksdict
                # reopens an existing database with the options stored in its OPTIONS
                # file, where the shared block cache is not (it got an 8 MiB cache per open).
                if read_only:
                    access = rocksdict.AccessType.read_only()
                    return rocksdict.Rdict(self.path, options, column_families={"default": options}, access_type=access)
                return rocksdict.Rdict(self.path, options, column_families={"default": options})
            except Exception as exc:
                # Another program (not kvctl) holds RocksDB's own LOCK file: busy, retry.
                if "lock" not in str(exc).lower():
                    raise driver_error(exc, "opening the database", self.path) from None
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy(self.path, timeout)
            time.sleep(min(left, delay))
            delay = min(delay * 1.5, _MAX_POLL)

    def _close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            # Committed writes are already in the WAL: a failing flush or close cannot
            # lose them. Flushing the memtables leaves no log to replay, which a
            # read-only open would otherwise do again at every open (RocksDB flushes
            # them at the next read-write open anyway: this only moves that work).
            with contextlib.suppress(Exception):
                if self.wrote:
                    db.flush()
            with contextlib.suppress(Exception):
                db.close()
        self.wrote = False
        fd, self._lock_fd = self._lock_fd, None
        if self._wait_fd is not None:
            os.close(self._wait_fd)
            self._wait_fd = None
        if self._revision_map is not None:
            self._revision_map.close()
            self._revision_map = None
        if fd is not None:
            os.close(fd)


_REVISION_BYTES = 20


def _make_private(path: str) -> None:
    """Give the files RocksDB just created in a new database ``path`` the owner-only
    mode :data:`PRIVATE_FILE` (RocksDB creates them 0644 less the umask; the files it
    makes later stay out of other users' reach in a directory kvctl made 0700)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(path):
            if entry.is_file(follow_symlinks=False):
                os.chmod(entry.path, PRIVATE_FILE)


def _map_revision_file(path: str) -> mmap.mmap:
    """``kvctl.rev`` mapped for writing (created as 20 zero bytes when missing)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        if os.fstat(fd).st_size < _REVISION_BYTES:
            os.ftruncate(fd, _REVISION_BYTES)
        return mmap.mmap(fd, _REVISION_BYTES)
    finally:
        os.close(fd)


WRITE_BUFFER_BYTES = 32 * 1024 * 1024
"""Size of a memtable (RocksDB's default: 64 MiB); with two of them at most, a
writer's recent writes hold 64 MiB, which keeps a 10M-row load under 500 MB."""

TARGET_FILE_BYTES = 16 * 1024 * 1024
"""Size of the files a compaction writes (RocksDB's default: 64 MiB). A compaction
holds the filter of the file it is writing (8 bytes a key) until the file is done:
with 64 MiB files a copy of 10M rows peaked at 122 MB against 73 MB at 1M rows,
with 16 MiB files at 107 MB (more, smaller files; reads are unchanged)."""

BLOCK_CACHE_BYTES = 64 * 1024 * 1024
"""Size of the block cache every open of every path in this process shares."""


@functools.lru_cache(maxsize=1)
def _table_options() -> Any:
    """Table options shared by every open in this process.

    Handles open and close around transactions, so a per-open cache would start
    cold each time; one process-wide LRU cache keeps hot blocks across reopens.
    Bloom filters (10 bits a key) let point reads of missing keys, which every
    insert and upsert does, skip most data blocks. The filters and index blocks live
    in that cache too (those of level 0 pinned there): left in each open file's own
    memory, as RocksDB does by default, they grow with the data (10 bits a key), and a
    process reading a 10M-row table held 40 MB more than at 1M rows.
    """
    import rocksdict

    table = rocksdict.BlockBasedOptions()
    table.set_block_cache(rocksdict.Cache(BLOCK_CACHE_BYTES))
    table.set_bloom_filter(10, False)
    table.set_cache_index_and_filter_blocks(True)
    table.set_pin_l0_filter_and_index_blocks_in_cache(True)
    return table
