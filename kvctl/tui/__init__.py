"""The Textual dashboard: browse, filter and edit tables of any provider."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import spi


def run_dashboard(url: str, provider: spi.Provider | None = None) -> None:
    """Open the dashboard on the provider at ``url`` (blocks until it quits); ``provider``
    is that provider already connected (else the dashboard connects to ``url``)."""
    from kvctl.tui.app import DashboardApp

    DashboardApp(url, provider=provider).run()
