"""Helpers the data commands share: opening a table and parsing common options."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import typer

import spi
from kvctl import jsontext
from kvctl.errors import CliError
from kvctl.state import get_state
from spi.textvalues import from_json_value


def open_table(ctx: typer.Context, name: str, *, create: bool) -> tuple[Any, spi.TableSpec]:
    """The auto-commit handle of table ``name`` and its spec (TableNotFoundError: exit 1).

    ``create``: whether the command may create the store (write commands); read-only
    commands pass False, so a misspelt store path is an error, not a new store.
    """
    handle = get_state(ctx).provider(create=create).table(name)
    return handle, handle.spec  # the handle's read path: no transaction


def ttl_seconds(ctx: typer.Context, text: str | None) -> int | float | None:
    """``--ttl DURATION`` → seconds (None when not given); bad input (exit 2) when the
    duration is not positive or the provider cannot expire rows."""
    if text is None:
        return None
    from kvctl.durations import parse_ttl  # lazy: only --ttl needs it, not get or scan

    seconds = parse_ttl(text)
    check_expiry(ctx)
    return seconds


def check_expiry(ctx: typer.Context) -> None:
    """Bad input (exit 2) unless the provider can expire rows."""
    provider = get_state(ctx).provider(create=True)
    if spi.Capability.EXPIRY not in provider.capabilities:
        raise CliError(f"the provider at {provider.url} cannot expire rows: a ttl is not available there")


def column_list(text: str | None) -> list[str] | None:
    """``--columns a,b`` → the column names, unchecked (None: every column)."""
    if text is None:
        return None
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise CliError("--columns needs at least one column name")
    return names


def parse_columns(spec: spi.TableSpec, text: str | None) -> list[str] | None:
    """``--columns a,b`` → checked column names (None: every column)."""
    names = column_list(text)
    for name in names or ():
        spec.type_of(name)
    return names


def parse_where(spec: spi.TableSpec, text: str | None) -> spi.Expr | None:
    """``--where`` text → a filter checked against the spec."""
    return None if text is None else spi.parse_where(text, spec)


def json_object(text: str, what: str) -> dict[str, Any]:
    """Parse a JSON object given on the command line."""
    try:
        value = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{what} is not valid JSON: {exc.msg} at character {exc.pos + 1}") from None
    if not isinstance(value, dict):
        raise CliError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def typed_values(spec: spi.TableSpec, values: Mapping[str, Any], what: str) -> dict[str, Any]:
    """JSON values (base64 bytes, ISO timestamps) → typed values, by column."""
    if not isinstance(values, Mapping):
        raise CliError(f"{what} must be a JSON object")
    try:
        return {column: from_json_value(spec, column, value) for column, value in values.items()}
    except spi.KvError as exc:
        raise CliError(f"{what}: {exc}") from None
