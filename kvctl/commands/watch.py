"""Change feeds: ``watch`` (live events), ``changes`` (recorded events, and
``changes compact``) and ``revision``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Annotated, Any

import typer

import spi
from kvctl import options
from kvctl.completion import complete_key_word, complete_table
from kvctl.durations import parse_duration, parse_ttl
from kvctl.errors import CliError
from kvctl.feeds import check_feeds, event_json, fed_spec, line_output, parse_ops, stream
from kvctl.groups import Command
from kvctl.output import print_value
from kvctl.state import get_state
from kvctl.words import parse_key, parse_words

Since = Annotated[
    int | None, typer.Option("--since", help="Start after this revision (replays the recorded events after it).")
]
Prev = Annotated[bool, typer.Option("--prev", help='Add "prev": the row before each write (null: none).')]
Ops = Annotated[
    str | None,
    typer.Option("--ops", help="Only these operations, comma-separated: put, delete, expire.", show_default=False),
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
    count: Annotated[
        int | None,
        typer.Option("--count", help="Stop after N events (at the end of the Nth's revision).", min=1),
    ] = None,
    timeout: Annotated[
        str | None, typer.Option("--timeout", help="Stop after this long without an event (90, 90s, 15m, 2h, 7d).")
    ] = None,
    prev: Prev = False,
    ops: Ops = None,
    progress: Annotated[
        str | None,
        typer.Option("--progress", help='Print {"progress": R} after this long without an event.'),
    ] = None,
    initial: Annotated[
        bool, typer.Option("--initial", help="First print the matching rows as they are, then follow.")
    ] = False,
    output: options.Output = None,
) -> None:
    """Print the table's events as they commit, one JSON line each (Ctrl-C stops).

    Without --since it starts at the current revision; --since REV first replays the
    recorded events after REV. Once it waits for events, stderr says
    `watching T from revision R`.
    """
    line_output(ctx, output)
    wait = None if timeout is None else parse_duration(timeout, "--timeout")
    every = None if progress is None else parse_ttl(progress, "--progress")
    kept = parse_ops(ops)
    if initial and since is not None:
        raise CliError("--initial starts at the revision its rows are read at: give --initial or --since, not both")
    provider = get_state(ctx).provider(create=False)
    spec = fed_spec(provider, table)
    if key and prefix:
        raise CliError("give either a key or --prefix words, not both")
    row_key = parse_key(spec, key) if key else None
    key_prefix = parse_words(spec, prefix, "--prefix") if prefix else None
    start = provider.revision() if since is None and not initial else since
    events = provider.watch(
        table,
        key=row_key,
        prefix=key_prefix,
        since=start,
        timeout=wait,
        prev=prev,
        ops=kept,
        progress=every,
        initial=initial,
    )
    if start is not None:
        _watching(table, start)

    def rest(revision: int, shown: int) -> Iterator[spi.Change]:
        """The events of ``revision`` after the first ``shown`` (it is committed whole)."""
        later = provider.changes(table, since=revision - 1, key=row_key, prefix=key_prefix, prev=prev, ops=kept)
        for event in islice(later, shown, None):
            if event.revision != revision:
                return
            yield event

    try:
        stream(_lines(table, events, count, prev, initial, rest))
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def _watching(table: str, revision: int) -> None:
    """Say on stderr that the watch waits for the events after ``revision`` (a
    readiness signal for scripts: anything committed from now on is printed)."""
    print(f"watching {table} from revision {revision}", file=sys.stderr, flush=True)


def _lines(
    table: str,
    events: Iterator[spi.Change | spi.Progress],
    count: int | None,
    prev: bool,
    initial: bool,
    rest: Callable[[int, int], Iterator[spi.Change]],
) -> Iterator[dict[str, Any]]:
    """The lines ``watch`` prints for ``events``: ``--initial``'s rows until its first
    progress, then live events. With ``count``, it stops once ``count`` event lines
    are out and the revision of the last one is whole: the starting rows all of them
    and their progress line, a live revision with ``rest(revision, shown)``."""
    shown = 0  # event lines printed
    revision, in_revision = 0, 0  # the last live event's revision; its events printed
    starting = initial
    for item in events:
        if isinstance(item, spi.Progress):
            yield {"progress": item.revision}
            if starting:
                starting = False
                if count is not None and shown >= count:
                    return
                _watching(table, item.revision)
            continue
        yield event_json(item, prev=prev, initial=starting)
        shown += 1
        if starting:
            continue
        in_revision = in_revision + 1 if item.revision == revision else 1
        revision = item.revision
        if count is not None and shown >= count:
            yield from (event_json(e, prev=prev) for e in rest(revision, in_revision))
            return


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
    prev: Prev = False,
    ops: Ops = None,
    before: Annotated[
        int | None, typer.Option("--before", help="With `compact`: forget the events before this revision.")
    ] = None,
    yes: options.Yes = False,
    output: options.Output = None,
) -> None:
    """Print the recorded events after --since, one compact JSON line each, and exit.

    `kvctl changes compact --before REV --yes` forgets the events before revision REV.
    """
    provider = get_state(ctx).provider(create=False)
    names = list(tables or [])
    if names[:1] == ["compact"] and (before is not None or yes or not provider.admin.exists("compact")):
        return _compact(provider, names[1:], before, yes)  # a table named compact: `changes compact` reads it
    if before is not None:
        raise CliError("--before belongs to `kvctl changes compact --before REV --yes`")
    line_output(ctx, output)
    kept = parse_ops(ops)
    check_feeds(provider)
    for name in names:
        fed_spec(provider, name)
    page = _Page(provider, names or None, since, limit, prev, kept)
    last = page.since

    def lines() -> Iterator[dict[str, Any]]:
        nonlocal last
        for event in page:
            last = event.revision
            yield event_json(event, prev=prev)

    stream(lines())
    if page.more:
        flags = [*(["--prev"] if prev else []), *([] if kept is None else ["--ops", ",".join(kept)])]
        print(
            f"more events follow: {' '.join(['kvctl changes', *names, *flags, '--since', str(last)])}", file=sys.stderr
        )


class _Page:
    """At most ``limit`` events ending at a revision boundary (so ``--since`` of the
    last one continues exactly); a single revision larger than ``limit`` comes whole.
    ``since`` None: from the oldest revision the feed still keeps (a compacted feed
    says which in its error)."""

    def __init__(
        self,
        provider: spi.Provider,
        tables: list[str] | None,
        since: int | None,
        limit: int,
        prev: bool = False,
        ops: list[str] | None = None,
    ) -> None:
        self._provider, self._tables, self._prev, self._ops = provider, tables, prev, ops
        try:
            self.since = 0 if since is None else since
            self._first = list(self._read(self.since, limit + 1))
        except spi.errors.RevisionCompactedError as exc:
            if since is not None:
                raise
            self.since = exc.oldest
            self._first = list(self._read(self.since, limit + 1))
        self.more = len(self._first) > limit
        self._limit = limit

    def _read(self, since: int, limit: int | None = None) -> Iterator[spi.Change]:
        """The events after ``since`` (at most ``limit``) with the command's ``--prev`` and ``--ops``."""
        return self._provider.changes(self._tables, since=since, limit=limit, prev=self._prev, ops=self._ops)

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
        for event in self._read(cut - 1):  # one revision, streamed
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
