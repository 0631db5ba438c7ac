"""``kvctl migrate``: apply versioned table-spec migrations, or show their status."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kvctl import options
from kvctl.errors import CliError, NotDone
from kvctl.groups import Command
from kvctl.output import print_rows
from kvctl.state import get_state


def migrate(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="Folder of NNNN_description.json|py migration files.")],
    to: Annotated[int | None, typer.Option("--to", help="Apply up to this version only.")] = None,
    show_status: Annotated[bool, typer.Option("--status", help="Show each migration's state; apply nothing.")] = False,
    output: options.Output = None,
) -> None:
    """Apply pending migrations in version order (each once; recorded in kvctl_migrations)."""
    # lazy: migrations imports hashlib (OpenSSL: a few ms), not for kvctl --help
    from migrations import MigrationFileError, MigrationStateError, load_directory
    from migrations import migrate as apply_migrations
    from migrations import status as migration_status

    state = get_state(ctx)
    try:
        found = load_directory(folder)
        if show_status:
            rows: list[dict[str, Any]] = [
                {
                    "version": s.version,
                    "description": s.description,
                    "state": s.state + (" (file modified since)" if s.modified else ""),
                    "applied_at": s.applied_at,
                }
                for s in migration_status(state.provider(create=False), found)
            ]
            print_rows(state.output_format(output), ["version", "description", "state", "applied_at"], rows)
            return
        applied = apply_migrations(state.provider(create=True), found, target=to)
    except MigrationFileError as exc:
        raise CliError(str(exc)) from None
    except MigrationStateError as exc:
        raise NotDone(str(exc)) from None
    typer.echo(
        f"applied {len(applied)} migration(s)" + (f": {', '.join(map(str, applied))}" if applied else ""), err=True
    )
    typer.echo(len(applied))


def register(app: typer.Typer) -> None:
    """Add ``migrate`` to ``app``."""
    app.command(cls=Command)(migrate)
