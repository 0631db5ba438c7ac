"""The Typer classes of every kvctl command group and command, and clean help pages.

Run with no arguments, a group with ``no_args_is_help`` prints its help and exits 2.
Click does that by raising a private exception (``typer._click``); :class:`HelpGroup`
does it with public API, so the root command only has to handle public exceptions.

Typer's help pages have rough edges this module smooths, for every command that is
registered with ``cls=Command`` (``app.command(cls=Command)``) and every group made
with :func:`sub_app`: required arguments in braces (``{table}``), a ``<bool>`` type
next to flags, which take no value, ``<list[str]>`` for a repeatable option, which
takes one value each time, and docstring paragraphs shown with their source line
breaks. tests/test_cli_help.py renders every page and checks for these.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer
from typer import TyperException
from typer.core import TyperCommand, TyperGroup

from kvctl.errors import USAGE
from spi.suggest import did_you_mean


def reflow(text: str | None) -> str | None:
    """A help text with each paragraph on one line, so the terminal wraps it (a
    paragraph starting with click's ``\\b`` marker keeps its line breaks)."""
    if text is None:
        return None
    body, marker, rest = inspect.cleandoc(text).partition("\f")
    paragraphs = [p if p.startswith("\b") else " ".join(p.split()) for p in body.split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p) + marker + rest


def _tidy(params: list[Any], ctx: Any) -> list[Any]:
    """Give parameters the names and types their help should show (idempotent)."""
    for param in params:
        if param.param_type_name == "argument":
            if param.metavar is None:
                param.metavar = param.name.upper() + ("..." if param.nargs != 1 else "")
        elif getattr(param, "is_flag", False):
            param.metavar = ""  # a flag takes no value: no type to show
        elif param.metavar is None and getattr(param, "multiple", False):
            shown = param.make_metavar(ctx)
            if shown.startswith("<list[") and shown.endswith("]>"):
                param.metavar = f"<{shown[6:-2]}>"  # one value each time the option is given
        if param.help:
            param.help = reflow(param.help)
    return params


def _usage_pieces(command: Any, ctx: Any) -> list[str]:
    """``[OPTIONS] TABLE [KEY]...``: arguments as click writes them, without braces."""
    pieces = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if param.param_type_name == "argument":
            name = param.name.upper()
            pieces.append((name if param.required else f"[{name}]") + ("..." if param.nargs != 1 else ""))
    return pieces


class Command(TyperCommand):
    """A kvctl command: a clean help page (see the module docs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = reflow(self.help)

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, tidied for the help page."""
        return _tidy(super().get_params(ctx), ctx)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """The usage line after the command name."""
        return _usage_pieces(self, ctx)


class HelpGroup(TyperGroup):
    """A command group that shows its help (exit 2) when given no arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = reflow(self.help)

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, tidied for the help page."""
        return _tidy(super().get_params(ctx), ctx)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse the group's arguments; none at all shows the help instead."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            # As click does: rich help goes to stdout from get_help(), plain help is returned.
            typer.echo(ctx.get_help(), err=True, color=ctx.color)
            raise typer.Exit(USAGE)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command ``args`` names; an unknown name within two edits of a command
        gets ``(did you mean 'scan'?)``."""
        try:
            return super().resolve_command(ctx, args)
        except TyperException as exc:  # click's "No such command" (one suggestion: ours)
            hint = did_you_mean(args[0], self.list_commands(ctx)) if args else ""
            if hint and self.get_command(ctx, args[0]) is None:
                exc.message = f"No such command {args[0]!r}{hint}"
                if hasattr(exc, "possibilities"):
                    exc.possibilities = []
            raise


def sub_app(help: str) -> typer.Typer:
    """A command group (``kvctl NAME ...``) that shows its help when run with no arguments."""
    return typer.Typer(cls=HelpGroup, help=help, no_args_is_help=True)
