"""The Textual dashboard: browse, filter and edit the tables of any provider."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvctl.config import Settings


def run_dashboard(settings: Settings, table: str | None = None) -> None:
    """Open the dashboard on the resolved provider (blocks until it quits); ``table``
    opens straight on that table's rows."""
    from kvctl.tui.app import DashboardApp
    from kvctl.tui.history import FilterHistory
    from kvctl.tui.session import Session, history_file

    DashboardApp(Session.from_settings(settings), table=table, history=FilterHistory(history_file())).run()
