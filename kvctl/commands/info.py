"""``kvctl providers``, ``kvctl config show`` and ``kvctl dashboard``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kvctl import options
from kvctl.completion import complete_table
from kvctl.groups import sub_app
from kvctl.output import print_rows
from kvctl.state import get_state

config_app = sub_app("Show the resolved configuration.")


def providers(ctx: typer.Context, output: options.Output = None) -> None:
    """List installed providers: URL scheme, class and capabilities."""
    from spi.registry import installed_providers, load_provider_class

    def describe(info: Any) -> dict[str, Any]:
        try:
            caps = ",".join(sorted(load_provider_class(info.scheme).capabilities))
        except Exception as exc:  # a broken third-party provider must not hide the others
            caps = f"unavailable: {exc}"
        return {"scheme": info.scheme, "class": info.target, "found_by": info.source, "capabilities": caps}

    rows = (describe(p) for p in installed_providers())
    print_rows(get_state(ctx).output_format(output), ["scheme", "class", "found_by", "capabilities"], rows)


@config_app.command("show")
def config_show(ctx: typer.Context, output: options.Output = None) -> None:
    """Print the provider URL (password masked), the profile, the config file, and where each came from."""
    settings = get_state(ctx).settings()
    rows: list[dict[str, Any]] = [
        {"setting": "url", "value": settings.masked_url, "source": settings.url_source},
        {"setting": "profile", "value": settings.profile, "source": settings.profile_source},
        {
            "setting": "config_file",
            "value": None if settings.config_file is None else str(settings.config_file),
            "source": settings.config_source,
        },
    ]
    print_rows(get_state(ctx).output_format(output), ["setting", "value", "source"], rows)


def dashboard(
    ctx: typer.Context,
    table: Annotated[
        str | None, typer.Argument(help="Open on this table's rows.", autocompletion=complete_table, show_default=False)
    ] = None,
) -> None:
    """Open the Textual dashboard on the resolved provider: browse, filter, edit, manage tables."""
    from kvctl.tui import run_dashboard  # textual is imported only here

    run_dashboard(get_state(ctx).settings(), table)


def register(app: typer.Typer) -> None:
    """Add ``providers``, ``config`` and ``dashboard`` to ``app``."""
    app.command()(providers)
    app.command()(dashboard)
    app.add_typer(config_app, name="config")
