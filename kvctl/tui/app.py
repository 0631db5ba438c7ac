"""The dashboard application: the screens on one session, the keys every screen shares,
the command palette, and switching profiles.

Screens live in :mod:`kvctl.tui.screens`, widgets in :mod:`kvctl.tui.widgets`, the
palette's providers in :mod:`kvctl.tui.commands`, styles in ``dashboard.tcss``. All
provider I/O runs in thread workers; errors become notifications.
"""

from __future__ import annotations

import gc
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.command import CommandPalette
from textual.screen import ModalScreen

from kvctl.tui.commands import PROVIDERS
from kvctl.tui.history import FilterHistory
from kvctl.tui.messages import OpenTable
from kvctl.tui.screens.help import HelpScreen, key_help
from kvctl.tui.screens.rows import RowsScreen
from kvctl.tui.screens.table_admin import AlterTableScreen, CreateTableScreen, DropTableScreen
from kvctl.tui.screens.tables import TablesScreen
from kvctl.tui.session import Session, error_text


class DashboardApp(App[None]):
    """Browse, filter and edit the tables of one provider; switch between profiles."""

    CSS_PATH = Path(__file__).with_name("dashboard.tcss")  # absolute: subclasses live elsewhere
    TITLE = "kvctl dashboard"
    COMMANDS = App.COMMANDS | PROVIDERS
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", key_display="?", tooltip="Show every key of this screen"),
        Binding("q", "quit", "Quit", tooltip="Quit the dashboard"),
        Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            key_display="^p",
            tooltip="Command palette: every action, table and profile; create, alter, drop tables",
        ),
    ]

    def __init__(self, session: Session, *, table: str | None = None, history: FilterHistory | None = None) -> None:
        super().__init__()
        self.session = session
        self._table = table
        self.history = history or FilterHistory()
        self._profiles: list[str] = []

    def on_mount(self) -> None:
        """Show the table list (and the table asked for on the command line); once it is
        drawn, keep what exists by then out of the garbage collector's full collections
        (:func:`gc.freeze`: Textual's and the app's objects, which a full collection
        walked for 50 ms, a stall of the screen every twenty pages or so)."""
        self._start(self.session, self._table)
        self.call_after_refresh(gc.freeze)

    def _start(self, session: Session, table: str | None) -> None:
        self.session = session
        self.sub_title = session.label
        self._profiles = session.profiles()
        self.push_screen(TablesScreen(session))
        if table is not None:
            self.push_screen(RowsScreen(session, table, self.history))

    # ------------------------------------------------------------------ the palette's API
    def table_names(self) -> list[str]:
        """The tables as last listed."""
        return list(self.session.table_names)

    def profile_names(self) -> tuple[list[str], str | None]:
        """The config file's profiles and the current one."""
        return self._profiles, self.session.profile

    @on(OpenTable)
    def table_opened(self, message: OpenTable) -> None:
        """Open a table chosen on the table list."""
        self.open_table(message.name, live=message.live)

    def open_table(self, name: str, *, live: bool = False) -> None:
        """Show the rows of ``name`` (``live``: in the live view), on top of the table list."""
        self._to_tables()
        self.push_screen(RowsScreen(self.session, name, self.history, live=live))

    def _to_tables(self) -> TablesScreen | None:
        """Close every screen above the table list; the list."""
        while len(self.screen_stack) > 2 and not isinstance(self.screen, TablesScreen):
            self.pop_screen()
        return self.screen if isinstance(self.screen, TablesScreen) else None

    def create_table(self) -> None:
        """Ask for a new table and create it."""
        self.push_screen(CreateTableScreen(self.session), partial(self._table_changed, "created"))

    def alter_table(self, name: str) -> None:
        """Ask for changes to a table and apply them."""
        self._with_spec(name)

    @work(thread=True, exclusive=True, group="admin")
    def _with_spec(self, name: str) -> None:
        try:
            spec = self.session.spec(name)
        except Exception as exc:
            self.call_from_thread(self.notify, error_text(exc), severity="error")
            return
        self.call_from_thread(
            self.push_screen, AlterTableScreen(self.session, spec), partial(self._table_changed, "altered")
        )

    def drop_table(self, name: str) -> None:
        """Drop a table once its name is typed."""
        self.push_screen(DropTableScreen(self.session, name), partial(self._table_changed, "dropped"))

    def _table_changed(self, done: str, name: str | None) -> None:
        if name is None:
            return
        self.notify(f"{done} table {name}")
        tables = self._to_tables()  # the list again, read anew, the cursor on the table
        if tables is not None:
            tables.action_refresh(select=name)

    def switch_profile(self, name: str) -> None:
        """Connect to profile ``name`` and start over on its table list."""
        try:
            session = self.session.for_profile(name)
        except Exception as exc:
            self.notify(error_text(exc), severity="error")
            return
        old = self.session
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self._start(session, None)
        self.notify(f"switched to profile {name}")
        self._close(old)

    @work(thread=True, group="close")
    def _close(self, session: Session) -> None:
        session.close()

    # ------------------------------------------------------------------ shared keys
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In a dialog ``q`` does not quit (a form's typing would be lost; ctrl+q does) and
        ``?`` is not help (both are typed into its fields): neither shows in its footer."""
        dialog = isinstance(self.screen, ModalScreen) and not isinstance(self.screen, CommandPalette)
        return not (action in ("quit", "help") and dialog)

    def action_help(self) -> None:
        """Show every key of the current screen."""
        if isinstance(self.screen, HelpScreen):
            return
        title = getattr(self.screen, "table_name", None) or type(self.screen).__name__.removesuffix("Screen")
        self.push_screen(HelpScreen(str(title), key_help(self.screen)))

    def on_unmount(self) -> None:
        """Close the provider; the objects frozen at the start are collected again."""
        gc.unfreeze()
        self.session.close()
