"""The Textual dashboard: browse, filter and edit tables of any provider."""

from __future__ import annotations


def run_dashboard(url: str) -> None:
    """Open the dashboard on the provider at ``url`` (blocks until it quits)."""
    from kvctl.tui.app import DashboardApp

    DashboardApp(url).run()
