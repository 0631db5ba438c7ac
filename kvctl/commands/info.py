"""``kvctl providers``, ``kvctl config show`` and ``kvctl dashboard``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kvctl import config, options
from kvctl.completion import complete_table
from kvctl.groups import Command, sub_app
from kvctl.output import print_rows
from kvctl.state import get_state
from spi.registry import installed_providers, load_provider_class, mask_password

config_app = sub_app("Show the resolved configuration.")


def providers(ctx: typer.Context, output: options.Output = None) -> None:
    """List installed providers: URL scheme, class and capabilities."""

    def describe(info: Any) -> dict[str, Any]:
        try:
            caps = ",".join(sorted(load_provider_class(info.scheme).capabilities))
        except Exception as exc:  # a broken third-party provider must not hide the others
            caps = f"unavailable: {exc}"
        return {"scheme": info.scheme, "class": info.target, "found_by": info.source, "capabilities": caps}

    rows = (describe(p) for p in installed_providers())
    print_rows(get_state(ctx).output_format(output), ["scheme", "class", "found_by", "capabilities"], rows)


@config_app.command("show", cls=Command)
def config_show(ctx: typer.Context, output: options.Output = None) -> None:
    """Print the provider URL, the profile and the config file with where each came from,
    then every profile of the file. Passwords show as ***; an unset password_env
    variable shows as missing."""
    state = get_state(ctx)
    settings = config.resolve(url=state.url, profile=state.profile, config=state.config_file, need_password=False)
    path = settings.config_file
    profiles = {} if path is None else config.all_profiles(path)  # a bad file fails before anything is printed
    rows: list[dict[str, Any]] = [
        {"setting": "url", "value": settings.masked_url, "source": settings.url_source},
        {"setting": "profile", "value": settings.profile, "source": settings.profile_source},
    ]
    if settings.password_env is not None:
        rows.append(_password_row("password", settings.password_env, settings.password_missing))
    rows.append(
        {"setting": "config_file", "value": None if path is None else str(path), "source": settings.config_source}
    )
    for name, profile in profiles.items():
        rows.append({"setting": f"profiles.{name}.url", "value": mask_password(profile.url), "source": f"file {path}"})
        if profile.password_env is not None:
            rows.append(_password_row(f"profiles.{name}.password", profile.password_env, profile.password_missing))
    print_rows(state.output_format(output), ["setting", "value", "source"], rows)


def _password_row(setting: str, variable: str, missing: bool) -> dict[str, Any]:
    return {"setting": setting, "value": "missing" if missing else "***", "source": f"env {variable}"}


def dashboard(
    ctx: typer.Context,
    table: Annotated[
        str | None, typer.Argument(help="Open on this table's rows.", autocompletion=complete_table, show_default=False)
    ] = None,
) -> None:
    """Open the Textual dashboard on the resolved provider: browse, filter, edit, manage tables."""
    from kvctl.tui import run_dashboard  # lazy: the dashboard's modules, not for providers or config

    state = get_state(ctx)
    # Opened and first used here, not in the dashboard, so that a store that does not
    # exist (or a server that is down) is an error line before the screen takes over.
    provider = state.provider(create=False, memory_warning=False)  # memory:// lives as long as the dashboard
    if table is None:
        # any lookup will do (list_tables would not: it lists nothing on a server store
        # kvctl never wrote to, where this read-only session could create no table)
        provider.admin.exists("orders")
    else:
        provider.admin.get_spec(table)  # a table that does not exist: exit 1 before the screen
    run_dashboard(state.settings(), table, provider=provider)


def register(app: typer.Typer) -> None:
    """Add ``providers``, ``config`` and ``dashboard`` to ``app``."""
    app.command(cls=Command)(providers)
    app.command(cls=Command)(dashboard)
    app.add_typer(config_app, name="config")
