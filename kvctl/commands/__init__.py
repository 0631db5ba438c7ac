"""The kvctl commands, one module per group, loaded only when run.

:data:`COMMANDS` maps each top-level command name to the module whose
``register(app: typer.Typer) -> None`` adds it; ``kvctl get`` imports only
:mod:`kvctl.commands.rows` (and ``kvctl --help`` all of them). To add commands,
write a module with ``register`` and list its command names here, in the order
``kvctl --help`` shows them (tests/test_cli_process.py checks the map against
what each module registers). Keep heavy imports (pyspark...) inside the command
functions. A group of subcommands (``kvctl NAME SUB``) is made with
:func:`kvctl.groups.sub_app`.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer

COMMANDS: dict[str, str] = {
    "providers": "kvctl.commands.info",
    "dashboard": "kvctl.commands.info",
    "config": "kvctl.commands.info",
    "table": "kvctl.commands.table",
    "put": "kvctl.commands.rows",
    "get": "kvctl.commands.rows",
    "delete": "kvctl.commands.rows",
    "update": "kvctl.commands.rows",
    "incr": "kvctl.commands.rows",
    "cas": "kvctl.commands.rows",
    "scan": "kvctl.commands.scan",
    "count": "kvctl.commands.scan",
    "stats": "kvctl.commands.stats",
    "txn": "kvctl.commands.txn",
    "watch": "kvctl.commands.watch",
    "changes": "kvctl.commands.watch",
    "revision": "kvctl.commands.watch",
    "apply": "kvctl.commands.apply",
    "copy": "kvctl.commands.copy",
    "diff": "kvctl.commands.diff",
    "export": "kvctl.commands.transfer",
    "import": "kvctl.commands.transfer",
    "migrate": "kvctl.commands.migrate",
}
"""Top-level command name → the module that registers it."""


def module_commands(module: str, only: str | None = None) -> dict[str, Any]:
    """The click commands (and groups) the command module ``module`` registers, by name;
    with ``only``, just that one (Typer then inspects one function, not the module's all)."""
    app = typer.Typer()
    importlib.import_module(module).register(app)
    if only is not None:
        app.registered_commands = [
            info
            for info in app.registered_commands
            if (info.name or typer.main.get_command_name(getattr(info.callback, "__name__", ""))) == only
        ]
        app.registered_groups = [info for info in app.registered_groups if info.name == only]
    return dict(typer.main.get_group(app).commands)


def load_command(name: str) -> Any:
    """The click command ``name`` (a key of :data:`COMMANDS`), its module imported now."""
    return module_commands(COMMANDS[name], only=name)[name]
