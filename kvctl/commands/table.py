"""``kvctl table``: create, list, describe, alter, verify, sweep, freeze, unfreeze, drop."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

import spi
from kvctl import options, specs
from kvctl.common import check_expiry, ttl_seconds
from kvctl.completion import complete_column
from kvctl.durations import describe_seconds
from kvctl.errors import CliError, NotDone
from kvctl.groups import Command, sub_app
from kvctl.output import OutputFormat, print_document, print_rows, print_value
from kvctl.state import get_state
from spi.capabilities import Capability

app = sub_app("Create, inspect, change and drop tables.")

SpecFile = Annotated[str | None, typer.Option("--spec", help="A spec file (JSON, or TOML by .toml suffix).")]


@app.command(cls=Command)
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The new table's name.", callback=options.table_name)],
    spec: SpecFile = None,
    field: Annotated[list[str] | None, typer.Option("--field", help="col:type (repeat).")] = None,
    pk: Annotated[str | None, typer.Option("--pk", help="Key columns in order: a,b.")] = None,
    index: Annotated[list[str] | None, typer.Option("--index", help="Indexed column (repeat).")] = None,
    changes: Annotated[bool, typer.Option("--changes", help="Record a change feed (kvctl watch, changes).")] = False,
    ttl: options.Ttl = None,
    from_file: Annotated[
        str | None,
        typer.Option(
            "--from", help="Infer the columns and their types from this data file (with --pk); loads no rows."
        ),
    ] = None,
    format: Annotated[str | None, typer.Option("--format", help="With --from: json|ndjson|csv|tsv.")] = None,
    null: options.Null = None,
    delimiter: options.Delimiter = None,
    encoding: options.Encoding = None,
) -> None:
    """Create a table (exit 1 if it exists).

    --from FILE --pk a,b reads the whole file and gives each column the narrowest of
    long, double, bool, timestamp (ISO 8601 only), string holding every value (empty
    and --null values don't count), prints the spec (the --spec shape) and creates the
    table without loading rows (kvctl put --file loads them).

    CSV/TSV headers that are not column names are renamed (od280/od315 becomes
    od280_od315; stderr lists each one); --pk and --index take the new names.
    """
    if spec is not None and (field or pk is not None or index or from_file is not None):
        raise CliError("give either --spec FILE or --field/--pk/--index, not both")
    if from_file is None and (format, null, delimiter, encoding) != (None,) * 4:
        raise CliError("--format, --null, --delimiter and --encoding apply to --from FILE")
    if from_file is not None:
        table_spec = _inferred(name, from_file, field, pk, index or [], format, null, delimiter, encoding)
    elif spec:
        table_spec = specs.read_spec_file(spec, name)
    else:
        table_spec = specs.from_options(name, field or [], pk, index or [])
    if changes:
        table_spec = table_spec.with_changes(True)
    if ttl is not None:
        table_spec = table_spec.with_ttl(ttl_seconds(ctx, ttl))
    elif table_spec.ttl is not None:
        check_expiry(ctx)
    get_state(ctx).provider(create=True).admin.create(table_spec)
    print(f"created table {name!r}", file=sys.stderr)


def _inferred(
    name: str,
    path: str,
    field: list[str] | None,
    pk: str | None,
    index: list[str],
    fmt: str | None,
    null: str | None,
    delimiter: str | None,
    encoding: str | None,
) -> spi.TableSpec:
    """``table create --from``: the inferred spec, printed on stdout."""
    from kvctl.infer import infer_spec  # lazy: the file readers, only table create --from needs them
    from kvctl.inputs import TextOptions  # lazy: as infer

    if field:
        raise CliError("--from infers the fields: give no --field")
    if pk is None:
        raise CliError("--from needs --pk (the key columns, in order: --pk a,b)")
    inferred = infer_spec(
        name, path, fmt, TextOptions.of(null, delimiter, encoding), specs.split_list(pk, "--pk"), index
    )
    print_document(OutputFormat.json, inferred.to_catalog())
    return inferred


@app.command("list", cls=Command)
def list_tables(
    ctx: typer.Context,
    counts: Annotated[bool, typer.Option("--counts", help="Add each table's row count.")] = False,
    output: options.Output = None,
) -> None:
    """List the tables, sorted by name (a frozen table's entry says so).

    A store without kvctl tables (a new PostgreSQL schema, an empty etcd prefix) lists
    nothing and says on stderr where it looked.
    """
    provider = get_state(ctx).provider(create=False)
    fmt = get_state(ctx).output_format(output)
    names = provider.admin.list_tables()
    if not names:
        print(f"no kvctl tables in {spi.mask_password(provider.url)}", file=sys.stderr)
        if fmt is not OutputFormat.json:
            return  # nothing at all, not a table or CSV header (-o json: [])
    frozen = {n for n in names if provider.admin.is_frozen(n)}
    flag = "yes" if fmt is OutputFormat.table else True
    rows = (
        {"name": n}
        | ({"rows": provider.table(n).count()} if counts else {})
        | ({"frozen": flag} if n in frozen else {})
        for n in names
    )
    print_rows(fmt, ["name"] + (["rows"] if counts else []) + (["frozen"] if frozen else []), rows)


@app.command(cls=Command)
def describe(
    ctx: typer.Context,
    name: options.Table,
    output: options.Output = None,
) -> None:
    """Show a table's spec (-o json prints the --spec file shape, with "frozen": true
    for a frozen table, which --spec ignores)."""
    spec = get_state(ctx).provider(create=False).admin.get_spec(name)
    fmt = get_state(ctx).output_format(output)
    if fmt in (OutputFormat.json, OutputFormat.ndjson):
        print_document(fmt, spec.to_catalog())
        return
    rows = (
        {
            "column": f.name,
            "type": f.type.value,
            "key": spec.primary_key.index(f.name) + 1 if spec.is_key(f.name) else None,
            "indexed": spec.is_indexed(f.name),
        }
        for f in spec.fields
    )
    print_rows(fmt, ["column", "type", "key", "indexed"], rows)
    ttl = "none" if spec.ttl is None else describe_seconds(spec.ttl)
    frozen = " · frozen: yes" if spec.frozen else ""
    print(f"change feed: {'on' if spec.changes else 'off'} · ttl: {ttl}{frozen}", file=sys.stderr)


@app.command(cls=Command)
def alter(
    ctx: typer.Context,
    name: options.Table,
    spec: SpecFile = None,
    add_field: Annotated[list[str] | None, typer.Option("--add-field", help="col:type to add (repeat).")] = None,
    add_index: Annotated[
        list[str] | None, typer.Option("--add-index", help="Column to index (repeat).", autocompletion=complete_column)
    ] = None,
    drop_index: Annotated[
        list[str] | None, typer.Option("--drop-index", help="Index to drop (repeat).", autocompletion=complete_column)
    ] = None,
    changes: Annotated[
        bool | None, typer.Option("--changes/--no-changes", help="Start or stop recording a change feed.")
    ] = None,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            help="Rows written from now on expire this long after each write (90s, 15m, 2h, 7d); none: never.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Apply a compatible change: add columns, add or drop indexes, widen int→long,
    float→double, turn the change feed on or off, set or clear the rows' ttl (rows
    already written keep their expiry)."""
    edits = bool(add_field or add_index or drop_index) or changes is not None or ttl is not None
    flags = "--add-field/--add-index/--drop-index/--changes/--ttl"
    if spec is not None and edits:
        raise CliError(f"give either --spec FILE or {flags}, not both")
    if spec is None and not edits:
        raise CliError(f"nothing to change: give --spec FILE or {flags}")
    seconds = None if ttl is None or ttl.strip().lower() == "none" else ttl_seconds(ctx, ttl)
    admin = get_state(ctx).provider(create=True).admin
    if spec is not None:
        new = specs.read_spec_file(spec, name)
        if new.ttl is not None:
            check_expiry(ctx)
    else:
        new = specs.altered(admin.get_spec(name), add_field or [], add_index or [], drop_index or [])
        if changes is not None:
            new = new.with_changes(changes)
        if ttl is not None:
            new = new.with_ttl(seconds)
    admin.create_or_update(new)
    print(f"altered table {name!r}", file=sys.stderr)


@app.command(cls=Command)
def verify(ctx: typer.Context, name: options.Table, output: options.Output = None) -> None:
    """Check a table's consistency (rows vs indexes); exit 1 if problems are found."""
    provider = get_state(ctx).provider(create=False)
    if Capability.VERIFY not in provider.capabilities:
        raise CliError(f"the provider at {provider.url} does not support verify")
    problems = provider.admin.verify(name)
    if problems:
        print_rows(get_state(ctx).output_format(output), ["problem"], ({"problem": p} for p in problems))
        raise NotDone(f"table {name!r}: {len(problems)} problem(s) found")
    print(f"table {name!r} is consistent", file=sys.stderr)


@app.command(cls=Command)
def sweep(ctx: typer.Context, name: options.Table) -> None:
    """Remove the table's expired rows now; prints how many were removed.

    Expired rows are never shown (they are gone at once); a sweep frees their space
    and records their expire events on a change-fed table. Providers also sweep in
    the background while a store is open, and writes sweep the rows they meet.
    """
    provider = get_state(ctx).provider(create=True)
    check_expiry(ctx)
    print_value(provider.admin.sweep(name))


@app.command(cls=Command)
def freeze(ctx: typer.Context, name: options.Table) -> None:
    """Refuse every row write to the table from now on (the fencing step of a
    cut-over): writes exit 1 with "table NAME is frozen"; reads, sweeps, alter and
    drop still work. Undo with kvctl table unfreeze."""
    get_state(ctx).provider(create=True).admin.freeze(name)
    print(f"froze table {name!r}: its rows are read-only until kvctl table unfreeze {name}", file=sys.stderr)


@app.command(cls=Command)
def unfreeze(ctx: typer.Context, name: options.Table) -> None:
    """Allow row writes to a frozen table again."""
    get_state(ctx).provider(create=True).admin.unfreeze(name)
    print(f"unfroze table {name!r}", file=sys.stderr)


@app.command(cls=Command)
def drop(ctx: typer.Context, name: options.Table, yes: options.Yes = False) -> None:
    """Drop a table and all its rows (needs --yes)."""
    if not yes:
        raise CliError(f"dropping {name!r} deletes all its rows; add --yes to confirm (nothing was dropped)")
    get_state(ctx).provider(create=True).admin.drop(name)
    print(f"dropped table {name!r}", file=sys.stderr)


def register(root: typer.Typer) -> None:
    """Add ``table`` to the root app."""
    root.add_typer(app, name="table")
