"""The command palette (ctrl+p): every action of the current screen, every table, table
management (create, alter, drop) and every profile of the config file, as Textual
command providers."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from kvctl.tui.screens.help import described_bindings


class Dashboard(Protocol):
    """What the palette asks of the dashboard app."""

    def table_names(self) -> list[str]:
        """The tables as last listed."""

    def profile_names(self) -> tuple[list[str], str | None]:
        """The config file's profiles and the current one."""

    def open_table(self, name: str) -> None:
        """Show a table's rows."""

    def create_table(self) -> None:
        """Open the create-table dialog."""

    def alter_table(self, name: str) -> None:
        """Open the alter-table dialog."""

    def drop_table(self, name: str) -> None:
        """Open the drop-table dialog."""

    def switch_profile(self, name: str) -> None:
        """Connect to another profile."""


Command = tuple[str, Callable[[], Any], str]
"""(what the palette shows, what runs, help line)."""


class _Commands(Provider):
    """A provider of a fixed list of commands, matched fuzzily."""

    @abstractmethod
    def commands(self) -> Iterator[Command]:
        """The commands offered."""

    @property
    def dashboard(self) -> Dashboard:
        """The app, as the palette uses it."""
        return cast(Dashboard, self.app)

    async def discover(self) -> Hits:
        """Every command, before anything is typed."""
        for text, run, help_text in self.commands():
            yield DiscoveryHit(text, run, help=help_text)

    async def search(self, query: str) -> Hits:
        """The commands matching what is typed, best first."""
        matcher = self.matcher(query)
        for text, run, help_text in self.commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), run, text=text, help=help_text)


class ActionCommands(_Commands):
    """Every key's action on the screen the palette was opened from."""

    def commands(self) -> Iterator[Command]:
        """One command per described binding, run as if its key was pressed."""
        for active in described_bindings(self.screen):
            binding = active.binding
            if binding.action == "command_palette":
                continue
            key = self.app.get_key_display(binding)
            text = binding.tooltip or binding.description
            yield text, partial(self.app.run_action, binding.action, active.node), f"key {key}"


class TableCommands(_Commands):
    """Open any table; create, alter or drop one."""

    def commands(self) -> Iterator[Command]:
        """Open/alter/drop per table, and create."""
        app = self.dashboard
        yield "Create a table", app.create_table, "a new table: fields, key, indexes, change feed, ttl"
        for name in app.table_names():
            yield f"Open table {name}", partial(app.open_table, name), "show its rows"
        for name in app.table_names():
            yield (
                f"Alter table {name}",
                partial(app.alter_table, name),
                "add fields or indexes, drop indexes, change feed, ttl",
            )
        for name in app.table_names():
            yield f"Drop table {name}", partial(app.drop_table, name), "delete the table and its rows (asks its name)"


class ProfileCommands(_Commands):
    """Switch to any profile of the config file."""

    def commands(self) -> Iterator[Command]:
        """One command per profile."""
        names, current = self.dashboard.profile_names()
        for name in names:
            note = "the current profile" if name == current else "connect to it"
            yield f"Switch to profile {name}", partial(self.dashboard.switch_profile, name), note


PROVIDERS: set[type[Provider]] = {ActionCommands, TableCommands, ProfileCommands}
"""The dashboard's command providers (next to Textual's system commands)."""
