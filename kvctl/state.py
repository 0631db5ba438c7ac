"""Per-invocation state: the global options and the provider, opened on first use."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

import typer

import spi
from kvctl import config
from kvctl.output import OutputFormat
from spi.errors import KvError

MEMORY_WARNING = (
    "warning: memory:// keeps nothing: what this command writes is gone when it ends (rocksdb:PATH keeps it)"
)
"""What a one-shot command on a ``memory://`` store says on stderr."""


@dataclass
class State:
    """Global options of one ``kvctl`` invocation (``ctx.obj`` of the root command)."""

    url: str | None = None
    profile: str | None = None
    config_file: str | None = None
    output: OutputFormat | None = None
    debug: bool = False
    _settings: config.Settings | None = field(default=None, repr=False)
    _provider: spi.Provider | None = field(default=None, repr=False)

    def settings(self) -> config.Settings:
        """The resolved provider settings (resolved once)."""
        if self._settings is None:
            self._settings = config.resolve(url=self.url, profile=self.profile, config=self.config_file)
        return self._settings

    def store_url(self, word: str, given_by: str) -> str:
        """The URL a store argument (``copy SRC DST``) names: a URL, or a profile of
        the config file this invocation uses (see :func:`kvctl.config.store_url`)."""
        return config.store_url(word, given_by, config=self.config_file)

    def provider(self, *, create: bool, memory_warning: bool = True) -> spi.Provider:
        """The connected provider (connected once, closed when the command ends).

        Read-only commands pass ``create=False``: a URL naming a store that does not
        exist is then an error (exit 2) instead of a new, empty store. The embedded
        default store is created on first use by any command. A ``memory://`` store
        warns once on stderr that nothing it holds outlives the command
        (``memory_warning=False``: a session that lives on, the dashboard).
        """
        if self._provider is None:
            settings = self.settings()
            if memory_warning and settings.url.partition(":")[0] == "memory":
                print(MEMORY_WARNING, file=sys.stderr)
            if settings.url_source == "default":
                config.make_private_folders(config.default_store(os.environ).parent)
                create = True
            self._provider = spi.connect(settings.url, create=create)
        return self._provider

    def table_names(self) -> list[str]:
        """The tables of the provider this command opened (none when it opened none,
        or the store cannot list them now): what a missing table's error suggests."""
        if self._provider is None:
            return []
        try:
            return self._provider.admin.list_tables()
        except KvError:
            return []

    def close(self) -> None:
        """Close the provider if one was opened."""
        if self._provider is not None:
            provider, self._provider = self._provider, None
            provider.close()

    def output_format(self, override: OutputFormat | None) -> OutputFormat:
        """The command's ``-o``, else the global one, else table on a terminal and ndjson otherwise."""
        chosen = override or self.output
        if chosen is not None:
            return chosen
        return OutputFormat.table if sys.stdout.isatty() else OutputFormat.ndjson


def get_state(ctx: typer.Context) -> State:
    """The :class:`State` of the invocation ``ctx`` belongs to."""
    obj = ctx.find_root().obj
    if not isinstance(obj, State):  # a command invoked without the root callback (tests)
        obj = ctx.find_root().obj = State()
    return obj


ARGV = "kvctl.argv"
"""The ``ctx.meta`` key under which the root command keeps the command line's arguments."""


def command_line(ctx: typer.Context) -> list[str]:
    """The arguments this invocation was started with (after ``kvctl``)."""
    return list(ctx.meta.get(ARGV, []))
