"""Change feeds: ``watch`` (live events), ``changes`` (recorded events, and
``changes compact``) and ``revision``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from itertools import islice
from typing import Annotated, Any

import typer

import spi
from kvctl import options
from kvctl.completion import complete_key_word, complete_table
from kvctl.durations import parse_duration
from kvctl.errors import CliError
from kvctl.feeds import check_feeds, event_json, fed_spec, stream
from kvctl.groups import Command
from kvctl.keys import parse_key, parse_words
from kvctl.output import OutputFormat, dumps, print_value
from kvctl.state import get_state

Since = Annotated[
    int | None, typer.Option("--since", help="Start after this revision (replays the recorded events after it).")
]


def watch(
    ctx: typer.Context,
    table: options.Table,
    key: Annotated[
        list[str] | None,
        typer.Argument(help="Only this row: its full key as col=value words.", autocompletion=complete_key_word),
    ] = None,
    prefix: options.Prefix = None,
    since: Since = None,
    count: Annotated[int | None, typer.Option("--count", help="Stop after N events.", min=1)] = None,
    timeout: Annotated[
        str | None, typer.Option("--timeout", help="Stop after this long without an event (90, 90s, 15m, 2h, 7d).")
    ] = None,
    output: options.Output = None,
) -> None:
    """Print the table's events as they commit, one NDJSON line each (Ctrl-C stops).

    Without --since it starts at the current revision; --since REV first replays the
    recorded events after REV.
    """
    wait = None if timeout is None else parse_duration(timeout, "--timeout")
    provider = get_state(ctx).provider(create=False)
    spec = fed_spec(provider, table)
    if key and prefix:
        raise CliError("give either a key or --prefix words, not both")
    row_key = parse_key(spec, key) if key else None
    key_prefix = parse_words(spec, prefix, "--prefix") if prefix else None
    events = provider.watch(table, key=row_key, prefix=key_prefix, since=since, timeout=wait)
    try:
        stream(event_json(e) for e in islice(events, count))
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def changes(
    ctx: typer.Context,
    tables: Annotated[
        list[str] | None,
        typer.Argument(
            help="Change-fed tables (default: every one); `changes compact` forgets old events.",
            autocompletion=complete_table,
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        int | None,
        typer.Option("--since", help="Print the events after this revision (default: the oldest kept)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Print at most N events (whole revisions).", min=1)] = 1000,
    before: Annotated[
        int | None, typer.Option("--before", help="With `compact`: forget the events before this revision.")
    ] = None,
    yes: options.Yes = False,
    output: options.Output = None,
) -> None:
    """Print the recorded events after --since (NDJSON; -o json: an array) and exit.

    `kvctl changes compact --before REV --yes` forgets the events before revision REV.
    """
    provider = get_state(ctx).provider(create=False)
    names = list(tables or [])
    if names[:1] == ["compact"] and (before is not None or yes or not provider.admin.exists("compact")):
        return _compact(provider, names[1:], before, yes)  # a table named compact: `changes compact` reads it
    if before is not None:
        raise CliError("--before belongs to `kvctl changes compact --before REV --yes`")
    check_feeds(provider)
    for name in names:
        fed_spec(provider, name)
    page = _Page(provider, names or None, since, limit)
    last = page.since
    if get_state(ctx).output_format(output) is OutputFormat.json:
        values = [event_json(e) for e in page]
        print(dumps(values))
        last = values[-1]["revision"] if values else page.since
    else:

        def lines() -> Iterator[dict[str, Any]]:
            nonlocal last
            for event in page:
                last = event.revision
                yield event_json(event)

        stream(lines())
    if page.more:
        print(f"more events follow: {' '.join(['kvctl changes', *names, '--since', str(last)])}", file=sys.stderr)


class _Page:
    """At most ``limit`` events ending at a revision boundary (so ``--since`` of the
    last one continues exactly); a single revision larger than ``limit`` comes whole.
    ``since`` None: from the oldest revision the feed still keeps (a compacted feed
    says which in its error)."""

    def __init__(self, provider: spi.Provider, tables: list[str] | None, since: int | None, limit: int) -> None:
        self._provider, self._tables = provider, tables
        try:
            self.since = 0 if since is None else since
            self._first = list(provider.changes(tables, since=self.since, limit=limit + 1))
        except spi.errors.RevisionCompactedError as exc:
            if since is not None:
                raise
            self.since = exc.oldest
            self._first = list(provider.changes(tables, since=self.since, limit=limit + 1))
        self.more = len(self._first) > limit
        self._limit = limit

    def __iter__(self) -> Iterator[spi.Change]:
        events = self._first
        if not self.more:
            yield from events
            return
        cut = events[self._limit].revision
        whole = [e for e in events[: self._limit] if e.revision != cut]
        if whole:
            yield from whole
            return
        for event in self._provider.changes(self._tables, since=cut - 1):  # one revision, streamed
            if event.revision != cut:
                return
            yield event


def _compact(provider: spi.Provider, extra: list[str], before: int | None, yes: bool) -> None:
    check_feeds(provider)
    if extra:
        raise CliError("`kvctl changes compact` takes no table: it compacts the store's whole feed")
    if before is None:
        raise CliError("`kvctl changes compact` needs --before REV (the oldest revision to keep)")
    if before < 1:
        raise CliError(f"--before must be a revision of at least 1, got {before}")
    current = provider.revision()
    if before > current + 1:
        raise CliError(f"--before {before} is beyond the store's revision {current}; nothing was compacted")
    if not yes:
        raise CliError(f"compacting forgets every event before revision {before}; add --yes to confirm")
    provider.compact(before - 1)
    print(f"forgot the events before revision {before}", file=sys.stderr)


def revision(ctx: typer.Context, output: options.Output = None) -> None:
    """Print the store's current revision (0 before the first recorded write)."""
    provider = get_state(ctx).provider(create=False)
    check_feeds(provider)
    print_value(provider.revision())


def register(app: typer.Typer) -> None:
    """Add ``watch``, ``changes`` and ``revision`` to ``app``."""
    app.command(cls=Command)(watch)
    app.command(cls=Command)(changes)
    app.command(cls=Command)(revision)
