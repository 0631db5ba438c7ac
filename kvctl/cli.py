"""The ``kvctl`` console script's entry point.

Kept small on purpose: ``kvctl --version`` answers before Typer (about 30 ms of imports)
is loaded, and every other command line goes to the Typer app in :mod:`kvctl.app`,
which imports only the module of the command being run.
"""

from __future__ import annotations

import gc
import sys

from kvctl import __version__


def main() -> None:
    """Entry point of the ``kvctl`` console script."""
    if sys.argv[1:] == ["--version"]:
        print(f"kvctl {__version__}")
        return
    # A command allocates many short-lived objects (imports, a scan's values) and makes
    # little cyclic garbage: a young collection every 700 allocations cost 10-20 ms of
    # a 200,000-row scan. Cycles are still collected, every 50,000 allocations.
    gc.set_threshold(50_000)
    try:
        from kvctl.cmdline import hide_passwords  # lazy: --version answers without it

        hide_passwords()  # a password in --url or SRC/DST: out of other users' ps, before anything slow
        import signal

        from kvctl.errors import on_sigterm  # lazy: it imports spi; --version answers without it

        signal.signal(signal.SIGTERM, on_sigterm)  # handled as Ctrl-C is, then exit 143
        import typer

        from kvctl.app import app  # lazy: Typer, spi, logging; --version answers without them

        typer.main.get_command(app).main(prog_name="kvctl")
    except KeyboardInterrupt:  # Ctrl-C while starting, before the app reports it as any command's
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
