"""The kvctl commands, one module per group; each module has ``register(app)``.

To add commands (e.g. the Spark export/import), write a module with a
``register(app: typer.Typer) -> None`` function and list it here. Keep heavy
imports (pyspark...) inside the command functions: every module listed here is
imported on each kvctl start. A group of subcommands (``kvctl NAME SUB``) is made
with :func:`kvctl.groups.sub_app`.
"""

from __future__ import annotations

import importlib

import typer

COMMAND_MODULES = (
    "kvctl.commands.info",
    "kvctl.commands.table",
    "kvctl.commands.rows",
    "kvctl.commands.scan",
    "kvctl.commands.txn",
    "kvctl.commands.transfer",
    "kvctl.commands.migrate",
)


def register_all(app: typer.Typer) -> None:
    """Register every command module's commands on ``app``."""
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)
