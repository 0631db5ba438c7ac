"""Shell completion callbacks: table names and column names from the resolved provider.

They run while the shell completes a word, before any command runs, so they read
the global options from the root context and fail silently (no suggestions).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import typer

import spi
from kvctl import config


def _with_provider(ctx: typer.Context, use: Callable[[Any], list[str]]) -> list[str]:
    params = ctx.find_root().params
    try:
        settings = config.resolve(url=params.get("url"), profile=params.get("profile"), config=params.get("config"))
        with spi.connect(settings.url, create=False) as provider:
            return use(provider)
    except Exception:  # completion must never break the shell
        return []


def _table_param(ctx: typer.Context, provider: Any) -> str | None:
    """The command's table: its parsed argument, else (click leaves arguments unparsed
    while completing an option's value) the first word of the command line naming a table."""
    table = ctx.params.get("table") or ctx.params.get("name")
    if isinstance(table, str):
        return table
    line = os.environ.get("COMP_WORDS") or os.environ.get("_TYPER_COMPLETE_ARGS") or ""
    tables = set(provider.admin.list_tables())
    return next((word for word in line.split() if word in tables), None)


def complete_table(ctx: typer.Context, incomplete: str) -> list[str]:
    """Table names starting with ``incomplete``."""
    return _with_provider(ctx, lambda p: [t for t in p.admin.list_tables() if t.startswith(incomplete)])


def _columns(ctx: typer.Context, keys_only: bool) -> list[str]:
    def columns(provider: Any) -> list[str]:
        table = _table_param(ctx, provider)
        if table is None:
            return []
        spec = provider.admin.get_spec(table)
        return list(spec.primary_key if keys_only else spec.columns)

    return _with_provider(ctx, columns)


def complete_column(ctx: typer.Context, incomplete: str) -> list[str]:
    """Column names of the command's table."""
    return [c for c in _columns(ctx, False) if c.startswith(incomplete)]


def complete_column_list(ctx: typer.Context, incomplete: str) -> list[str]:
    """The next name of a comma list of columns (``--columns a,b``)."""
    done, _, last = incomplete.rpartition(",")
    head = f"{done}," if done else ""
    taken = set(done.split(","))
    return [head + c for c in _columns(ctx, False) if c.startswith(last) and c not in taken]


def complete_key_word(ctx: typer.Context, incomplete: str) -> list[str]:
    """``keycol=`` for the key columns of the command's table."""
    return [f"{c}=" for c in _columns(ctx, True) if f"{c}=".startswith(incomplete)]


def complete_column_word(ctx: typer.Context, incomplete: str) -> list[str]:
    """``col=`` for the columns of the command's table (``--set``)."""
    return [f"{c}=" for c in _columns(ctx, False) if f"{c}=".startswith(incomplete)]
