"""What the dashboard is connected to: one provider, its profile, and what has been learnt
about its tables (row counts). No UI code: every method that touches the provider blocks
and is called from a thread worker.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import spi
from kvctl import config
from kvctl.errors import CliError, message_for

log = logging.getLogger(__name__)


def error_text(exc: BaseException) -> str:
    """A failure as one line for a notification; an unreachable store says so and how to
    retry. Logged with its traceback: at DEBUG for what a user or the store caused, at
    ERROR for anything else (a bug: the line shown names its type)."""
    text = message_for(exc)
    expected = isinstance(exc, (spi.KvError, CliError, ValueError))
    log.log(logging.DEBUG if expected else logging.ERROR, "dashboard: %s", text, exc_info=exc)
    if isinstance(exc, spi.ProviderUnavailableError):
        return f"store unavailable: {text} (press r to retry)"
    return text


@dataclass
class Counts:
    """Row counts already known, by table and filter text (``""``: every row).

    A count being taken is shown with the rows counted so far; counts are kept
    exact across the dashboard's own writes (see :meth:`adjust`), and dropped on
    refresh.
    """

    known: dict[tuple[str, str], int] = field(default_factory=dict)
    through: dict[tuple[str, str], int] = field(default_factory=dict)
    """For a count finished while the live view was on: the revision it includes (the
    events up to it are counted in it, the live view adds the later ones)."""
    _lock: threading.Condition = field(default_factory=threading.Condition, repr=False)

    def get(self, table: str, where: str) -> int | None:
        """The count of ``table`` under filter ``where``, if known."""
        with self._lock:
            return self.known.get((table, where))

    def wait(self, table: str, where: str, timeout: float) -> int | None:
        """:meth:`get`, waiting up to ``timeout`` seconds for a count being taken
        elsewhere to be put (blocks: call from a worker)."""
        with self._lock:
            self._lock.wait_for(lambda: (table, where) in self.known, timeout)
            return self.known.get((table, where))

    def put(self, table: str, where: str, count: int, through: int = 0) -> None:
        """Remember a count (``through``: the revision it includes, 0: not known)."""
        with self._lock:
            self.known[(table, where)] = count
            self.through[(table, where)] = through
            self._lock.notify_all()

    def forget(self, table: str) -> None:
        """Drop every count of ``table`` (refresh, alter, drop)."""
        with self._lock:
            for key in [k for k in self.known if k[0] == table]:
                del self.known[key]
                self.through.pop(key, None)

    def adjust(self, table: str, matches: Callable[[str, int], int | None]) -> None:
        """Apply writes: ``matches(where, through)`` is how the count under ``where``,
        which includes the events up to revision ``through``, changed; a count whose
        change cannot be told (None, or a filter that cannot be evaluated) is dropped."""
        with self._lock:
            for key in [k for k in self.known if k[0] == table]:
                try:
                    delta = matches(key[1], self.through.get(key, 0))
                except spi.KvError:
                    delta = None
                if delta is None:
                    del self.known[key]
                    self.through.pop(key, None)
                else:
                    self.known[key] += delta


class Session:
    """One provider the dashboard works on (connected on first use, from a worker)."""

    def __init__(
        self,
        url: str,
        *,
        profile: str | None = None,
        config_file: Path | None = None,
        provider: Any = None,
    ) -> None:
        self.url = url
        self.profile = profile
        self.config_file = config_file
        self.counts = Counts()
        self.table_names: list[str] = []
        """The tables as last listed (for the command palette)."""
        self._provider: spi.Provider | None = provider
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: config.Settings, provider: spi.Provider | None = None) -> Session:
        """The session of the resolved command-line settings (``provider``: already connected)."""
        return cls(settings.url, profile=settings.profile, config_file=settings.config_file, provider=provider)

    @property
    def label(self) -> str:
        """Where the dashboard is connected, for the header (password masked)."""
        where = spi.mask_password(self.url)
        return f"profile {self.profile} · {where}" if self.profile else where

    @property
    def provider(self) -> spi.Provider:
        """The provider, connected now if it is not yet (blocks: call from a worker). Like
        every read-only command, the dashboard never creates a store: a path that does
        not exist is an error."""
        with self._lock:
            if self._provider is None:
                self._provider = spi.connect(self.url, create=False)
            return self._provider

    @property
    def server(self) -> bool:
        """True for a server store (SQL: PostgreSQL), which counts and aggregates rows
        itself, on a connection of its own: one call for a count or statistics of a
        big table holds up nothing in this process (an embedded store reads every row
        in this process, in one session; blocks: call from a worker)."""
        return spi.Capability.SQL in self.provider.capabilities

    def table(self, name: str) -> spi.Table:
        """The auto-commit handle of table ``name``."""
        return self.provider.table(name)

    def spec(self, name: str) -> spi.TableSpec:
        """The current spec of table ``name``."""
        return self.provider.admin.get_spec(name)

    def profiles(self) -> list[str]:
        """The profiles of the config file (empty without one; a broken file has none)."""
        if self.config_file is None:
            return []
        try:
            return sorted(config.load_config(self.config_file).get("profiles", {}))
        except config.ConfigError:
            return []

    def for_profile(self, name: str) -> Session:
        """A new session on profile ``name`` of the same config file, resolved as
        ``kvctl --config FILE --profile NAME`` would (not yet connected;
        :class:`kvctl.config.ConfigError` for an unknown profile or a missing password)."""
        if self.config_file is None:
            raise config.ConfigError("no config file: profiles come from kvctl.toml or --config")
        return Session.from_settings(config.resolve(url=None, profile=name, config=str(self.config_file)))

    def close(self) -> None:
        """Close the provider if it was connected."""
        with self._lock:
            provider, self._provider = self._provider, None
        if provider is not None:
            provider.close()


def history_file(env: dict[str, str] | None = None) -> Path:
    """Where filter history is kept: ``$XDG_STATE_HOME/kvctl/dashboard-history.json``."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kvctl" / "dashboard-history.json"


__all__ = ["Counts", "Session", "error_text", "history_file"]
