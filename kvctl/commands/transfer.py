"""``export`` / ``import`` (Spark): placeholders until the Spark issue registers the real ones.

The Spark work replaces this module's entry in :data:`kvctl.commands.COMMAND_MODULES`.
"""

from __future__ import annotations

import typer

from kvctl.errors import CliError

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def export(ctx: typer.Context) -> None:
    """Export a table with Spark (not available yet)."""
    raise CliError("export is not available yet in this kvctl build (it needs the Spark integration)")


def import_(ctx: typer.Context) -> None:
    """Import a file into a table with Spark (not available yet)."""
    raise CliError("import is not available yet in this kvctl build (it needs the Spark integration)")


def register(app: typer.Typer) -> None:
    """Add the placeholder ``export`` and ``import`` commands."""
    app.command("export", context_settings=_CONTEXT)(export)
    app.command("import", context_settings=_CONTEXT)(import_)
