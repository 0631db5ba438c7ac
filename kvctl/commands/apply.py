"""``kvctl apply TABLE [--file PATH|-]``: apply a stream of change events to TABLE.

The input is NDJSON event lines as ``watch`` and ``changes`` print them (from this
store or another); ``{"progress": R}`` lines are allowed. Events are grouped by
revision and each revision is applied in one transaction with its applied position
(:mod:`kvctl.replay`, :mod:`spi.applied`), so a rerun over a stream that overlaps
what was applied changes nothing. A revision is applied once a line of a later
revision, a progress line or the end of the input shows it is whole.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

import typer

import spi
from kvctl import jsontext, options
from kvctl.common import typed_values
from kvctl.errors import CliError
from kvctl.groups import Command
from kvctl.inputs import open_input
from kvctl.output import print_value
from kvctl.partway import Tally, reporting, rerun
from kvctl.replay import Event, Replayer, Target
from kvctl.state import get_state
from spi import applied
from spi.changes import OPS, PUT
from spi.textvalues import parse_timestamp

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class BadLine(Exception):
    """Line ``number`` of the input cannot be applied (why: the message)."""

    def __init__(self, number: int, reason: str) -> None:
        super().__init__(reason)
        self.number = number


def apply(
    ctx: typer.Context,
    table: options.Table,
    file: Annotated[
        str, typer.Option("--file", help="NDJSON change events (`kvctl watch`/`changes` lines); - for stdin.")
    ] = "-",
    source: Annotated[
        str | None,
        typer.Option(
            "--source",
            help="Record the applied position under this name instead of each event's source table.",
            show_default=False,
        ),
    ] = None,
    output: options.Output = None,
) -> None:
    """Apply change events to TABLE, one transaction per source revision; prints the revisions applied.

    A put writes its row with the event's version and expiry; a delete or expire
    deletes the key. Events at or below the last revision applied from the same
    source table (or --source NAME) are skipped, so a rerun over an overlapping
    stream changes nothing. Live replica: kvctl watch A --since 0 | kvctl apply B.
    """
    provider = get_state(ctx).provider(create=True)
    spec = provider.admin.get_spec(table)
    applied.ensure_table(provider)
    tally = Tally(revisions=0)
    replayer = Replayer(provider)
    again = " with the same input" if file == "-" else ""
    stream = open_input(file)
    try:
        with reporting(
            tally, lambda: f"to finish (revisions applied are skipped{again}): {rerun(ctx)}", keep=(BadLine,)
        ):
            for revision, events in _revisions(spec, stream, source):
                with tally.committing():
                    if replayer.apply(revision, events):
                        tally.applied()
    except BadLine as exc:
        done = tally.revisions or 0
        before = "nothing was applied" if done == 0 else f"the {done} revisions before it were applied"
        raise CliError(f"line {exc.number}: {exc}; {before}, nothing from that line on") from None
    finally:
        stream.close()
    print_value(tally.revisions or 0)


def _revisions(spec: spi.TableSpec, lines: Iterator[str], source: str | None) -> Iterator[tuple[int, list[Event]]]:
    """The events of the input, a whole revision at a time, in input order."""
    revision, events = 0, list[Event]()
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        event = _parse(spec, number, text)
        if isinstance(event, int) or event.revision != revision:
            if events:
                yield revision, events
            revision, events = (revision, []) if isinstance(event, int) else (event.revision, [])
        if not isinstance(event, int):
            events.append((Target(spec.name, source or event.table), event))
    if events:
        yield revision, events


def _parse(spec: spi.TableSpec, number: int, text: str) -> spi.Change | int:
    """One input line: an event, or the revision of a ``{"progress": R}`` line."""
    try:
        line = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(number, f"not valid JSON: {exc.msg} at character {exc.pos + 1}") from None
    if not isinstance(line, dict):
        raise BadLine(number, f"expected a JSON object, got {type(line).__name__}")
    if set(line) == {"progress"}:
        return _whole(number, line, "progress", 0)
    missing = [k for k in ("revision", "table", "op", "key") if k not in line]
    if missing:
        raise BadLine(number, f"not a change event: no {', '.join(missing)}")
    revision, op, key, row = _whole(number, line, "revision", 1), line["op"], line["key"], line.get("row")
    if op not in OPS or not isinstance(line["table"], str):
        raise BadLine(number, f"op must be one of {', '.join(OPS)} and table a name")
    if not isinstance(key, dict) or (op == PUT and not isinstance(row, dict)):
        raise BadLine(number, "key must be an object" + (" and a put's row an object" if op == PUT else ""))
    mismatch = _check_columns(spec, key, row if op == PUT else None)
    if mismatch is not None:
        raise BadLine(number, mismatch)
    try:
        typed_key = typed_values(spec, key, "key")
        typed_row = typed_values(spec, row, "row") if isinstance(row, dict) and op == PUT else None
    except CliError as exc:
        raise BadLine(number, str(exc)) from None
    version = _whole(number, line, "version", 1) if op == PUT else None
    return spi.Change(
        revision, line["table"], op, typed_key, typed_row, version, _EPOCH, expires_at=_expires(number, line)
    )


def _check_columns(spec: spi.TableSpec, key: Iterable[str], row: Iterable[str] | None) -> str | None:
    """Why events with these ``key`` columns (in order) and ``row`` columns cannot be
    applied to the table ``spec`` (None: they can). A destination table may have
    columns the events lack only when ``row`` is None (deletes carry no row)."""
    key = list(key)
    if key != list(spec.primary_key):
        theirs = ", ".join(spec.primary_key)
        return f"the events' key columns ({', '.join(key)}) are not those of table {spec.name!r} ({theirs})"
    if row is not None and set(row) != set(spec.columns):
        return (
            f"the events' row columns ({', '.join(sorted(row))}) are not those of table {spec.name!r} "
            f"({', '.join(sorted(spec.columns))})"
        )
    return None


def _whole(number: int, line: dict[str, Any], name: str, least: int) -> int:
    value = line.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise BadLine(number, f"{name} must be an integer of at least {least}, got {json.dumps(value)}")
    return value


def _expires(number: int, line: dict[str, Any]) -> dt.datetime | None:
    """The event's ``expires`` (ISO 8601 or null; absent: never)."""
    value = line.get("expires")
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadLine(number, f"expires must be an ISO 8601 time or null, got {json.dumps(value)}")
    try:
        return parse_timestamp(value, "expires")
    except spi.KvError as exc:
        raise BadLine(number, str(exc)) from None


def register(app: typer.Typer) -> None:
    """Add the ``apply`` command."""
    app.command("apply", cls=Command)(apply)
