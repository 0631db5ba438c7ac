"""Row commands: put (one row or a bulk file), get, delete, update, incr, cas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

import spi
from kvctl import options
from kvctl.common import json_object, open_table, parse_columns, parse_where, ttl_seconds, typed_values
from kvctl.completion import complete_column_word
from kvctl.errors import CliError, NotDone
from kvctl.groups import Command
from kvctl.output import RowPrinter, print_value
from kvctl.state import get_state
from kvctl.words import build_range, parse_assignments, parse_key
from spi.textvalues import key_words, parse_word
from spi.validate import validate_row

if TYPE_CHECKING:
    from kvctl.inputs import TextOptions


def put(
    ctx: typer.Context,
    table: options.Table,
    row_json: Annotated[str | None, typer.Argument(help="The row as a JSON object.", show_default=False)] = None,
    file: Annotated[str | None, typer.Option("--file", help="Load rows from a file (- for stdin).")] = None,
    format: Annotated[
        str | None, typer.Option("--format", help="json|ndjson|csv|tsv (default: by file name; stdin: json/ndjson).")
    ] = None,
    mode: Annotated[str, typer.Option("--mode", help="upsert|insert|replace (with --file).")] = "upsert",
    batch_size: Annotated[int, typer.Option("--batch-size", help="Rows per atomic batch (with --file).")] = 10_000,
    if_absent: Annotated[bool, typer.Option("--if-absent", help="Only insert; exit 1 if the key exists.")] = False,
    if_version: options.IfVersion = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite the whole row (unset columns: null).")] = False,
    ttl: options.Ttl = None,
    null: options.Null = None,
    delimiter: options.Delimiter = None,
    encoding: options.Encoding = None,
    output: options.Output = None,
) -> None:
    """Write one row (prints its new version) or load a file (prints rows loaded).

    A plain put merges the given columns into an existing row. --if-version N merges
    only if the row is at version N (with --replace: replaces only then). --ttl
    gives the rows written an expiry (default: the table's ttl, if any). A key met
    more than once in a file: later rows replace earlier ones, stdout prints the
    distinct keys written and stderr how many rows were replaced.

    CSV/TSV headers that are not column names are renamed as table create --from
    names them (stderr lists each one).
    """
    if (row_json is None) == (file is None):
        raise CliError("give either ROW_JSON or --file PATH (- for stdin)")
    if file is not None:
        if if_absent or replace or if_version is not None:
            raise CliError("--if-absent, --if-version and --replace apply to a single row, not to --file")
        from kvctl.inputs import TextOptions  # lazy: the file readers, only put --file needs them

        return _put_file(ctx, table, file, format, mode, batch_size, ttl, TextOptions.of(null, delimiter, encoding))
    if format is not None or mode != "upsert" or batch_size != 10_000 or (null, delimiter, encoding) != (None,) * 3:
        raise CliError("--format, --mode, --batch-size, --null, --delimiter and --encoding apply to --file")
    if if_absent and (replace or if_version is not None):
        raise CliError("--if-absent cannot be combined with --replace or --if-version")
    seconds = ttl_seconds(ctx, ttl)
    handle, spec = open_table(ctx, table, create=True)
    row = validate_row(spec, typed_values(spec, json_object(row_json or "", "ROW_JSON"), "ROW_JSON"))
    if if_absent:
        version = handle.insert(row, ttl=seconds)
    elif replace:
        version = handle.replace(row, version=if_version, ttl=seconds)
    elif if_version is not None:
        key = {c: row[c] for c in spec.primary_key}
        version = handle.update(key, {c: v for c, v in row.items() if c not in key}, version=if_version, ttl=seconds)
    else:
        version = handle.upsert(row, ttl=seconds)
    print_value(version)


def _put_file(
    ctx: typer.Context,
    table: str,
    path: str,
    fmt: str | None,
    mode: str,
    batch_size: int,
    ttl: str | None,
    text: TextOptions,
) -> None:
    from kvctl import bulk  # lazy: the file readers and the spool, only put --file needs them
    from kvctl.partway import Tally, reporting, rerun  # lazy: as bulk

    if mode not in ("upsert", "insert", "replace"):
        raise CliError(f"--mode must be upsert, insert or replace, not {mode!r}")
    bulk.check_batch_size(batch_size)
    seconds = ttl_seconds(ctx, ttl)
    handle, spec = open_table(ctx, table, create=True)
    spool = bulk.check(spec, path, fmt, text)
    again = " with the same input" if path == "-" else ""
    try:
        distinct = spool.distinct_keys() if mode != "insert" else spool.count  # insert refuses a repeat
        update, finish = bulk.progress_bar(spool.count)
        with reporting(
            Tally(spool.count),
            lambda: (
                f"to finish (upserting{again}): {rerun(ctx, mode='upsert')}"
                if mode == "insert"
                else f"to finish (a rerun {mode}s{again}): {rerun(ctx)}"
            ),
        ) as tally:
            try:
                with tally.committing():
                    loaded = bulk.load(
                        handle,
                        spool,
                        mode=mode,
                        batch_size=batch_size,
                        source="stdin" if path == "-" else path,
                        progress=tally.progress(update),
                        ttl=seconds,
                        distinct=mode != "insert" and distinct == spool.count,
                    )
            finally:
                finish()
    finally:
        spool.close()
    if distinct < loaded:
        bulk.report_repeats(loaded, distinct)
        loaded = distinct
    print_value(loaded)


def get(
    ctx: typer.Context,
    table: options.Table,
    key: options.Key,
    columns: options.Columns = None,
    versions: Annotated[
        bool, typer.Option("--versions", help="Add the row's _version (and _expires_at if it expires).")
    ] = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="Then print the row again after each change (null: deleted).")
    ] = False,
    timeout: Annotated[
        str | None, typer.Option("--timeout", help="With --watch: stop after this long without a change.")
    ] = None,
    output: options.Output = None,
) -> None:
    """Print one row. A missing row prints nothing on stdout and exits 1.

    With --watch: the row (nothing if missing), then the whole row after each change
    to it, null when it is deleted, one JSON line each, until interrupted or --timeout.
    """
    if timeout is not None and not watch:
        raise CliError("--timeout applies to get --watch")
    if watch:
        from kvctl.feeds import watch_row  # lazy: the change feed's modules (~7 ms), only get --watch needs them

        return watch_row(ctx, table, key, columns, versions, timeout)
    handle, spec = open_table(ctx, table, create=False)
    cols = parse_columns(spec, columns)
    k = parse_key(spec, key)
    row = handle.read(k, columns=cols)
    if row is None:
        raise NotDone(f"no row with key {key_words(spec, [k[c] for c in spec.primary_key])} in {table!r}")
    values: dict[str, Any] = row.to_dict()
    if versions:
        values["_version"] = row.version
        if row.expires_at is not None:
            values["_expires_at"] = row.expires_at
    printer = RowPrinter(get_state(ctx).output_format(output), values, single=True, keys=spec.primary_key)
    printer.add(values)
    printer.close()


def delete(
    ctx: typer.Context,
    table: options.Table,
    key: Annotated[
        list[str] | None, typer.Argument(help="The full key as col=value words.", show_default=False)
    ] = None,
    if_version: options.IfVersion = None,
    prefix: options.Prefix = None,
    ge: options.Ge = None,
    gt: options.Gt = None,
    le: options.Le = None,
    lt: options.Lt = None,
    where: options.Where = None,
    all_rows: Annotated[bool, typer.Option("--all", help="Delete every row (with --yes).")] = False,
    yes: options.Yes = False,
    output: options.Output = None,
) -> None:
    """Delete one row (prints true/false) or a range of rows with --yes (prints rows deleted)."""
    ranged = bool(prefix or ge or gt or le or lt or where is not None or all_rows)
    if key and ranged:
        raise CliError("give either a key or range options (--prefix/--ge/--gt/--le/--lt/--where/--all), not both")
    if not key and not ranged:
        raise CliError("give the row's key (col=value ...) or a range (--prefix/--ge/--gt/--le/--lt/--where/--all)")
    handle, spec = open_table(ctx, table, create=True)
    if key:
        print_value(handle.delete(parse_key(spec, key), version=if_version))
        return
    if if_version is not None:
        raise CliError("--if-version applies to deleting one row by key")
    rng = build_range(spec, prefix=prefix, ge=ge, gt=gt, le=le, lt=lt)
    if all_rows and (rng is not None or where is not None):
        raise CliError("--all cannot be combined with range or --where options")
    expr = parse_where(spec, where)
    if not yes:
        raise CliError("a range delete needs --yes (nothing was deleted)")
    print_value(handle.delete_range(rng, where=expr))


def update(
    ctx: typer.Context,
    table: options.Table,
    key: options.Key,
    set_: Annotated[
        list[str],
        typer.Option("--set", help="col=value to set (repeat).", autocompletion=complete_column_word),
    ],
    default: Annotated[
        str | None, typer.Option("--default", help="ROW_JSON to create a missing row from (no key columns).")
    ] = None,
    if_version: options.IfVersion = None,
    output: options.Output = None,
) -> None:
    """Change columns of an existing row; prints the new version (missing row: exit 1)."""
    handle, spec = open_table(ctx, table, create=True)
    k = parse_key(spec, key)
    changes = parse_assignments(spec, set_)
    base = None if default is None else typed_values(spec, json_object(default, "--default"), "--default")
    try:
        version = handle.update(k, changes, default=base, version=if_version)
    except spi.RowNotFoundError as exc:
        if base is not None or if_version is not None:
            raise
        raise NotDone(f"{exc}; add --default '{{}}' to create it") from None
    print_value(version)


def incr(
    ctx: typer.Context,
    table: options.Table,
    key: options.Key,
    column: options.Column,
    by: Annotated[str, typer.Option("--by", help="Amount to add (may be negative).")] = "1",
    output: options.Output = None,
) -> None:
    """Add to a numeric column (a missing row or null counts as 0); prints the new value."""
    handle, spec = open_table(ctx, table, create=True)
    k = parse_key(spec, key)
    ftype = spec.type_of(column)
    try:
        amount: int | float = int(by) if ftype.is_integer else float(by)
    except ValueError:
        raise CliError(
            f"--by must be {'an integer' if ftype.is_integer else 'a number'} for column {column!r}, got {by!r}"
        ) from None
    print_value(handle.increment(k, column, amount))


def cas(
    ctx: typer.Context,
    table: options.Table,
    key: options.Key,
    column: options.Column,
    set_: Annotated[str, typer.Option("--set", help="The new value.")],
    expect: Annotated[str | None, typer.Option("--expect", help="The value the column must hold.")] = None,
    expect_null: Annotated[
        bool, typer.Option("--expect-null", help="Swap only if the row is missing or the column null.")
    ] = False,
    output: options.Output = None,
) -> None:
    """Compare-and-swap one column: prints true (exit 0) or false (exit 1)."""
    if (expect is None) == (not expect_null):
        raise CliError("give exactly one of --expect VALUE or --expect-null")
    handle, spec = open_table(ctx, table, create=True)
    k = parse_key(spec, key)
    spec.type_of(column)
    expected = None if expect is None else parse_word(spec, column, expect)
    swapped = handle.compare_and_swap(k, column, expected, parse_word(spec, column, set_))
    print_value(swapped)
    if not swapped:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the row commands to ``app``."""
    app.command(cls=Command)(put)
    app.command(cls=Command)(get)
    app.command(cls=Command)(delete)
    app.command(cls=Command)(update)
    app.command(cls=Command)(incr)
    app.command(cls=Command)(cas)
