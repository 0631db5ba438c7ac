"""``kvctl diff SRC DST [TABLE... | --all]``: the rows that differ between two stores
(each a URL or a config profile's name, :meth:`kvctl.state.State.store_url`), or
between two tables of one store (``TABLE:OTHER``) — the check before a cut-over.

The comparison is :func:`spi.diff.compare`: checksums of key ranges on both sides
(PostgreSQL computes them in the server), narrowed down to rows only where they
differ. One line per differing row on stdout, ordered by key; stderr notes columns
left out and tables missing on a side, and ends with one summary line per table.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated, Any

import typer

import spi
from kvctl import options
from kvctl.common import column_list
from kvctl.errors import CliError
from kvctl.groups import Command
from kvctl.output import OutputFormat, RowPrinter
from kvctl.render import json_row, word
from kvctl.state import get_state
from spi.diff import SIDES, Difference, TableDiff, compare
from spi.spec import validate_name
from spi.textvalues import key_words

COLUMNS = ("table", "key", "only", "changed", "src", "dst")
"""The fields of an output line (an ``only`` line has the first three)."""


def _pairs(words: list[str] | None) -> list[tuple[str, str]] | None:
    """The TABLE arguments as (source table, destination table): ``TABLE`` or
    ``TABLE:OTHER``, each a valid table name (exit 2 otherwise)."""
    if words is None:
        return None
    pairs = []
    for text in words:
        name, colon, other = text.partition(":")
        pairs.append((validate_name(name, "table"), validate_name(other, "table") if colon else name))
    return pairs


def diff(
    ctx: typer.Context,
    src: Annotated[
        str,
        typer.Argument(metavar="SRC", help="The source store: a provider URL or a profile name.", show_default=False),
    ],
    dst: Annotated[
        str,
        typer.Argument(
            metavar="DST", help="The store to compare with: a provider URL or a profile name.", show_default=False
        ),
    ],
    tables: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TABLE...",
            help="The tables to compare (TABLE:OTHER compares SRC's TABLE with DST's OTHER), or --all.",
            show_default=False,
        ),
    ] = None,
    all_tables: Annotated[
        bool, typer.Option("--all", help="Compare every table of either store, in name order.")
    ] = False,
    where: options.Where = None,
    columns: Annotated[
        str | None,
        typer.Option("--columns", help="Comma list of the columns to compare (key columns always are)."),
    ] = None,
    versions: Annotated[bool, typer.Option("--versions", help="Compare row versions too (_version).")] = False,
    limit: Annotated[
        int, typer.Option("--limit", help="Print at most N differences (0: all); the summary counts every one.")
    ] = 1000,
    summary: Annotated[bool, typer.Option("--summary", help="Print only the summary (stderr), no rows.")] = False,
    output: options.Output = None,
) -> None:
    """Print the rows that differ between two stores' tables; exit 0 when equal, 1 when not.

    SRC and DST are each a provider URL or the name of a profile of the config file.

    Each line is a row only in the source ("only": "src"), only in the destination
    ("only": "dst"), or in both with other values ("changed": the columns, with both
    rows), ordered by key. Stderr ends with one line per table: "T: N rows compared, A
    only in src, B only in dst, C changed".

    Key columns must match in order; int/long and float/double compare by value; other
    type differences exit 2, and columns on one side only are left out (named on stderr).

    It compares checksums of key ranges (in the server on PostgreSQL) and reads rows
    only where they differ: two equal tables cost about a scan. The cut-over recipe is
    in docs/cutover.md.
    """
    pairs = _pairs(tables)
    if bool(pairs) == all_tables:
        raise CliError("name the tables to compare, or give --all (not both)")
    if limit < 0:
        raise CliError(f"--limit must be 0 (all) or more, not {limit}")
    state = get_state(ctx)
    fmt = state.output_format(output)
    src_url, dst_url = state.store_url(src, "argument SRC"), state.store_url(dst, "argument DST")
    wanted = column_list(columns)
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(spi.connect(src_url, create=False))
        destination = source if dst_url == src_url else stack.enter_context(spi.connect(dst_url, create=False))
        if pairs is None:
            names = sorted(set(source.admin.list_tables()) | set(destination.admin.list_tables()))
            pairs = [(name, name) for name in names]
        if source.store_id == destination.store_id and any(a == b for a, b in pairs):
            raise CliError(
                f"SRC and DST are the same store ({source.store_id}): name each pair of tables as TABLE:OTHER"
            )
        diffs = [
            compare(source, destination, a, b, columns=wanted, versions=versions, where=where, missing_ok=all_tables)
            for a, b in pairs
        ]
        if not _run(diffs, fmt, limit, summary):
            raise typer.Exit(1)


def _run(diffs: list[TableDiff], fmt: OutputFormat, limit: int, summary: bool) -> bool:
    """Print the differences of every table (at most ``limit``, 0: all; none with
    ``summary``), then the summary lines; whether every table was equal."""
    printer = None if summary else RowPrinter(fmt, COLUMNS)
    line = _json_line if fmt in (OutputFormat.json, OutputFormat.ndjson) else _text_line
    shown = 0
    try:
        for table_diff in diffs:
            _notes(table_diff)
            for difference in table_diff:
                if printer is None:
                    continue
                if limit and shown == limit:
                    print(
                        f"--limit {limit} reached: further differences are counted, not printed (--limit 0 prints all)",
                        file=sys.stderr,
                    )
                    printer.close()
                    printer = None
                    continue
                printer.add(line(table_diff, difference))
                shown += 1
    finally:
        if printer is not None:
            printer.close()
    for table_diff in diffs:
        print(table_diff.stats.summary(table_diff.name), file=sys.stderr)
    return all(d.stats.differences == 0 for d in diffs)


def _notes(table_diff: TableDiff) -> None:
    """Say on stderr what a table's comparison leaves out: a side's missing table, the
    columns only one side has."""
    name = table_diff.name
    if table_diff.missing is not None:
        other = "dst" if table_diff.missing == "src" else "src"
        print(
            f"{name}: no such table in the {SIDES[table_diff.missing]}: its rows count as only in {other}",
            file=sys.stderr,
        )
    for column, side in table_diff.comparison.left_out.items():
        print(f"{name}: column {column!r} is only in the {SIDES[side]} table: left out", file=sys.stderr)


def _json_line(table_diff: TableDiff, difference: Difference) -> dict[str, Any]:
    """A difference as JSON (CLI.md): values in their JSON forms."""
    shown = difference.as_dict()
    for part in ("key", "src", "dst"):
        if part in shown:
            shown[part] = json_row(shown[part])
    return shown


def _text_line(table_diff: TableDiff, difference: Difference) -> dict[str, Any]:
    """A difference as table/csv/tsv cells: the key as ``col=value`` words, the changed
    columns' values on each side as words."""
    key = key_words(table_diff.spec, tuple(difference.key.values()))
    if difference.only is not None:
        return {"table": difference.table, "key": key, "only": difference.only, "changed": "", "src": "", "dst": ""}
    cells: dict[str, Any] = {"table": difference.table, "key": key, "only": "", "changed": ",".join(difference.changed)}
    for side, row in (("src", difference.src), ("dst", difference.dst)):
        cells[side] = " ".join(f"{c}={word(row[c])}" for c in difference.changed) if row else ""
    return cells


def register(app: typer.Typer) -> None:
    """Add the ``diff`` command."""
    app.command("diff", cls=Command)(diff)
