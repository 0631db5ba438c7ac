"""The Typer app: the root command, global options, and errors → exit codes.

Every failure ends as one ``error: ...`` line on stderr and an exit code (see
:mod:`kvctl.errors`); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer import Abort, Exit, TyperException

from kvctl import __version__
from kvctl.commands import COMMANDS, load_command
from kvctl.errors import INTERNAL, exit_code_for, report, terminated
from kvctl.groups import HelpGroup
from kvctl.logs import log_to_stderr
from kvctl.output import OutputFormat
from kvctl.state import ARGV, State, get_state

log = logging.getLogger(__name__)
logging.getLogger("kvctl").addHandler(logging.NullHandler())  # records go nowhere unless configured


class KvctlGroup(HelpGroup):
    """The root command: loads the command it runs (only that one's module), and maps
    exceptions to ``error:`` lines and exit codes."""

    def list_commands(self, ctx: Any) -> list[str]:
        """Every command name, in help order."""
        return list(COMMANDS)

    def get_command(self, ctx: Any, name: str) -> Any:
        """The command ``name``, its module imported on first use."""
        command = self.commands.get(name)
        if command is None and name in COMMANDS:
            command = load_command(name)
            self.add_command(command, name)
        return command

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        """The root context, holding the command line's arguments in ``ctx.meta``."""
        argv = list(args)
        ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta[ARGV] = argv
        return ctx

    def invoke(self, ctx: Any) -> Any:
        """Run the command; report errors as one line (``--debug``: after the
        traceback). An internal error (a bug) is logged too."""
        try:
            result = super().invoke(ctx)
            if terminated():  # the command ended on its own (the dashboard quits on SIGTERM)
                raise KeyboardInterrupt
            return result
        except (Exit, Abort, TyperException):
            raise
        except BrokenPipeError:
            _silence_stdout()
            raise Exit(1) from None
        except KeyboardInterrupt as exc:
            raise Exit(report(exc)) from None
        except Exception as exc:
            debug = isinstance(ctx.obj, State) and ctx.obj.debug
            if exit_code_for(exc) == INTERNAL:
                log.error("internal error: %s: %s", type(exc).__name__, exc, exc_info=exc if debug else None)
            elif debug:
                traceback.print_exception(exc)
            raise Exit(report(exc, ctx.obj.table_names if isinstance(ctx.obj, State) else None)) from None
        finally:
            if isinstance(ctx.obj, State):
                ctx.obj.close()

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Like click's main, but usage errors are one ``error:`` line too."""
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            code = rv if isinstance(rv, int) else 0
        except TyperException as exc:  # click's usage errors and the like
            where: Any = getattr(exc, "ctx", None)
            message = exc.format_message()
            suggested = message.endswith("?)")  # "(did you mean 'scan'?)" ends the line
            hint = f" (see '{where.command_path} --help')" if where is not None and not suggested else ""
            print(f"error: {message}{hint}", file=sys.stderr)
            code = exc.exit_code
        except Abort:  # Ctrl-C (or SIGTERM) outside a command
            code = exit_code_for(KeyboardInterrupt())
        if standalone_mode:
            sys.exit(code)
        return code


def _silence_stdout() -> None:
    """After a closed pipe (``kvctl scan | head``), drop whatever is still buffered."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _version(value: bool) -> None:
    if value:
        print(f"kvctl {__version__}")
        raise typer.Exit()


app = typer.Typer(
    cls=KvctlGroup,
    name="kvctl",
    help="Admin tool over the StructuredTable SPI: data on stdout, everything else on stderr.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def root(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option("--url", help="Provider URL (env KVCTL_URL).", show_default=False)] = None,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Config profile (env KVCTL_PROFILE).", show_default=False)
    ] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="Config file (env KVCTL_CONFIG).", show_default=False)
    ] = None,
    output: Annotated[
        OutputFormat | None,
        typer.Option("--output", "-o", help="Output format (default: table on a terminal, else ndjson)."),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show tracebacks, and log on stderr what the providers do: conflict retries, fast-path misses, "
            "lock waits and hand-offs, sweeps (KVCTL_LOG=debug|info|warning logs without tracebacks).",
        ),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", help="Print the version.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Choose the provider and output format; then run a command."""
    state = get_state(ctx)
    state.url, state.profile, state.config_file, state.output, state.debug = url, profile, config, output, debug
    level = "debug" if debug else os.environ.get("KVCTL_LOG", "").strip().lower()
    if level:
        log_to_stderr(level)
