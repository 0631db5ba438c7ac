"""The Typer group class of every kvctl command group (``kvctl``, ``kvctl table``...).

Run with no arguments, a group with ``no_args_is_help`` prints its help and exits 2.
Click does that by raising a private exception (``typer._click``); this class does
it with public API, so the root command only has to handle public exceptions.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from kvctl.errors import USAGE


class HelpGroup(TyperGroup):
    """A command group that shows its help (exit 2) when given no arguments."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse the group's arguments; none at all shows the help instead."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            # As click does: rich help goes to stdout from get_help(), plain help is returned.
            typer.echo(ctx.get_help(), err=True, color=ctx.color)
            raise typer.Exit(USAGE)
        return super().parse_args(ctx, args)


def sub_app(help: str) -> typer.Typer:
    """A command group (``kvctl NAME ...``) that shows its help when run with no arguments."""
    return typer.Typer(cls=HelpGroup, help=help, no_args_is_help=True)
