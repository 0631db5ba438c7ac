"""The Textual dashboard: browse, filter and edit the tables of any provider."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvctl.logs import away_from_terminal
from kvctl.tui.history import FilterHistory
from kvctl.tui.session import Session, history_file

if TYPE_CHECKING:
    import spi
    from kvctl.config import Settings


def run_dashboard(settings: Settings, table: str | None = None, provider: spi.Provider | None = None) -> None:
    """Open the dashboard on the resolved provider (blocks until it quits); ``table``
    opens straight on that table's rows; ``provider`` is the provider already connected
    (else the dashboard connects when it starts)."""
    from kvctl.tui.app import DashboardApp  # lazy: textual, only once the dashboard opens

    session = Session.from_settings(settings, provider=provider)
    history = history_file()
    with away_from_terminal(history.with_name("dashboard.log")):
        DashboardApp(session, table=table, history=FilterHistory(history)).run()
