"""What the change-feed commands share (``watch``, ``changes``, ``get --watch``):
checks with the ``kvctl`` hint, their options (``-o``, ``--ops``), events as compact
JSON lines, and ending on a closed pipe.

An event prints as one JSON object (CLI.md): ``{"revision", "table", "op", "key",
"row", "version", "time", "expires", "created"}`` (``"prev"`` with ``--prev``,
``"initial": true`` on the rows ``watch --initial`` starts with), values in their
JSON form (:mod:`kvctl.render`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import typer

import spi
from kvctl.common import parse_columns
from kvctl.durations import parse_duration
from kvctl.errors import CliError
from kvctl.output import OutputFormat
from kvctl.render import json_row, json_safe
from kvctl.state import get_state
from kvctl.words import parse_key
from spi.capabilities import Capability
from spi.changes import OPS, PUT
from spi.textvalues import to_json_value
from spi.validate import check_projection


def check_feeds(provider: spi.Provider) -> None:
    """Bad usage (exit 2) unless the provider records change feeds."""
    if Capability.CHANGES not in provider.capabilities:
        raise CliError(f"the provider at {provider.url} does not record change feeds")


def fed_spec(provider: spi.Provider, table: str) -> spi.TableSpec:
    """The spec of ``table`` (missing: exit 1), which must record a change feed
    (else exit 2, naming the command that turns it on)."""
    check_feeds(provider)
    spec = provider.admin.get_spec(table)
    if not spec.changes:
        raise CliError(no_feed(table))
    return spec


def no_feed(table: str) -> str:
    """What to say of a table without a change feed, with the command that turns it on."""
    return f"table {table!r} does not record a change feed; `kvctl table alter {table} --changes` turns it on"


def line_output(ctx: typer.Context, output: OutputFormat | str | None, command: str | None = None) -> None:
    """Check the ``-o`` of a command that prints compact JSON lines, one event a line
    (``command``, default its name): none, ``ndjson`` or ``json`` (both print the same
    lines, so the output always pipes into ``kvctl apply``); any other format given is
    bad usage (exit 2)."""
    chosen = output or get_state(ctx).output
    if chosen is not None and OutputFormat(chosen) not in (OutputFormat.json, OutputFormat.ndjson):
        name = command or ctx.info_name
        raise CliError(
            f"{name} prints JSON lines, one event a line: -o json or -o ndjson (the same lines), "
            f"not -o {OutputFormat(chosen).value}"
        )


def parse_ops(text: str | None) -> list[str] | None:
    """The ``--ops`` of ``watch``/``changes``: comma-separated operations (None: all);
    anything but ``put``, ``delete``, ``expire`` is bad input (exit 2)."""
    if text is None:
        return None
    names = [word.strip() for word in text.split(",")]
    bad = [name for name in names if name not in OPS]
    if bad:
        accepted = ", ".join(OPS)
        raise CliError(f"--ops takes {accepted} (comma-separated), got {bad[0]!r}")
    return list(dict.fromkeys(names))


def event_json(event: spi.Change, *, prev: bool = False, initial: bool = False) -> dict[str, Any]:
    """An event as the JSON object ``watch`` and ``changes`` print: with ``prev`` the
    row before the write too, with ``initial`` marked as one of ``watch --initial``'s
    starting rows."""
    line: dict[str, Any] = {
        "revision": event.revision,
        "table": event.table,
        "op": event.op,
        "key": json_row(event.key),
        "row": None if event.row is None else json_row(event.row),
        "version": event.version,
        "time": to_json_value(event.time),
        "expires": None if event.expires_at is None else to_json_value(event.expires_at),
        "created": event.created if event.op == PUT else None,
    }
    if prev:
        line["prev"] = None if event.prev is None else json_row(event.prev)
    if initial:
        line["initial"] = True
    return line


def line_dumps(value: Any) -> str:
    """``value`` as one compact JSON line (no spaces), non-ASCII kept as is but DEL
    and C1 escaped (:func:`kvctl.render.json_safe`)."""
    return json_safe(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()).decode()


def stream(lines: Iterator[Any]) -> None:
    """Print each JSON value of ``lines`` on its own compact line, flushed at once; a
    reader that goes away (``watch ... | head``) ends the command with exit 0."""
    try:
        for value in lines:
            sys.stdout.write(line_dumps(value) + "\n")
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more reaches the closed pipe
        raise typer.Exit(0) from None


def watch_row(
    ctx: typer.Context, table: str, words: list[str], columns: str | None, versions: bool, timeout: str | None
) -> None:
    """``get TABLE KEY... --watch``: the row, then the row after each change (null:
    gone), each printed only when it differs from the one before. A row that expires
    prints null at its expiry, without waiting for a sweep's event."""
    line_output(ctx, ctx.params.get("output"), "get --watch")  # get's own -o (ctx.params: not yet converted)
    wait = None if timeout is None else parse_duration(timeout, "--timeout")
    provider = get_state(ctx).provider(create=False)
    spec = fed_spec(provider, table)
    cols = parse_columns(spec, columns)
    shape = check_projection(spec, cols)  # what read(columns=...) returns: the columns and the key
    key = parse_key(spec, words)
    handle = provider.table(table)
    since = provider.revision()  # first: a write after it is an event, even if the read sees it too
    row = handle.read(key, columns=cols)
    shown = None if row is None else (row.to_dict(), row.version)
    expires = None if row is None else row.expires_at

    def states() -> Iterator[Any]:
        nonlocal shown, since, expires
        if shown is not None:
            yield _shown(shown, versions)
        last_change = time.monotonic()
        while True:
            # Watch until the user's --timeout, or the shown row's expiry if sooner.
            left = None if wait is None else max(0.0, last_change + wait - time.monotonic())
            if expires is not None:
                to_expiry = max(0.0, (expires - dt.datetime.now(dt.UTC)).total_seconds()) + 0.01
                left = to_expiry if left is None else min(left, to_expiry)
            for event in provider.watch(table, key=key, since=since, timeout=left):
                if not isinstance(event, spi.Change):  # no progress= asked: never a Progress
                    continue
                since, last_change = event.revision, time.monotonic()
                now = None
                if event.row is not None and event.version is not None:
                    now = (event.row if shape is None else {c: event.row[c] for c in shape}, event.version)
                    current = handle.read(key)  # events carry no expiry: the row does
                    expires = None if current is None or current.version != event.version else current.expires_at
                else:
                    expires = None
                if now != shown:
                    shown = now
                    yield None if now is None else _shown(now, versions)
            if expires is not None and expires <= dt.datetime.now(dt.UTC):
                expires, last_change = None, time.monotonic()
                if shown is not None:
                    shown = None
                    yield None
            elif wait is not None and time.monotonic() - last_change >= wait:
                return

    stream(states())


def _shown(state: tuple[dict[str, Any], int], versions: bool) -> dict[str, Any]:
    values = json_row(state[0])
    if versions:
        values["_version"] = state[1]
    return values
