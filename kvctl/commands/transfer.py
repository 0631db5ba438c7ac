"""``export`` / ``import``: move a table to or from parquet, csv, json or orc files with Spark.

Spark (pyspark, a JVM) is imported only when one of these commands runs. Cheap
checks — options, the provider URL, the table, ``--where``, the paths — run first,
so a usage error never waits for Spark to start.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

import spi
from kvctl import options
from kvctl.errors import CliError, NotDone
from kvctl.feeds import fed_spec
from kvctl.groups import Command
from kvctl.output import print_value
from kvctl.partway import Tally, reporting, rerun
from kvctl.spark.errors import SparkJobError
from kvctl.spark.folders import FORMATS, input_format, local_path, spec_for_import
from kvctl.spark.urls import check_url
from kvctl.state import get_state

Format = Annotated[str, typer.Option("--format", help="parquet|csv|json|orc.")]
Master = Annotated[
    str | None, typer.Option("--master", help="Spark master URL (default: local[*], this machine's cores).")
]


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _choice(value: str, choices: tuple[str, ...], option: str) -> None:
    if value not in choices:
        raise CliError(f"{option} must be one of {', '.join(choices)}, not {value!r}")


def _progress() -> tuple[Callable[[Any], None] | None, Callable[[], None]]:
    """A progress callback writing one updating line on stderr (terminals only)."""
    if not sys.stderr.isatty():
        return None, lambda: None
    shown = [False]

    def update(p: Any) -> None:
        sys.stderr.write(f"\r{p.phase}: {p.tasks_done}/{p.tasks_total} Spark tasks done, {p.rows:,} rows\x1b[K")
        sys.stderr.flush()
        shown[0] = True

    def finish() -> None:
        if shown[0]:
            sys.stderr.write("\n")

    return update, finish


def _run(fn: Callable[[Callable[[Any], None] | None], Any], tally: Tally | None = None) -> Any:
    """Run a transfer with progress; Spark failures become one error line. With
    ``tally``, an import's: the rows its finished Spark tasks wrote (at least that many
    were) of those its check counted."""
    update, finish = _progress()

    def progress(p: Any) -> None:
        if tally is not None:
            if p.phase == "check":
                tally.total = p.rows
            else:
                tally.started = True  # Spark counts a task's rows when it ends: some may be in already
                tally.rows = p.rows
        if update is not None:
            update(p)

    try:
        return fn(progress if tally is not None else update)
    except SparkJobError as exc:
        from kvctl.spark.session import interrupted  # lazy: pyspark is heavy and optional

        if interrupted():  # the interrupt, not the job, is what happened
            raise KeyboardInterrupt from None
        raise CliError(str(exc), exc.exit_code) from None
    finally:
        finish()


SPARK_MODULES = ("pyspark",)
"""What ``export`` and ``import`` need beyond a plain install (the ``spark`` extra; pyarrow is in the plain install)."""


def _require_spark(command: str) -> None:
    """Exit 2 saying how to add Spark when the ``spark`` extra is not installed."""
    for module in SPARK_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            raise CliError(
                f"kvctl {command} runs on Spark, an optional part of kvctl ({module} is not installed): "
                "pip install 'kvctl[spark]' (and Java 17 or newer)"
            ) from None


def _session(ctx: typer.Context, master: str | None) -> Any:
    from kvctl.spark.session import spark_session  # lazy: pyspark is heavy and optional

    try:
        return spark_session(master, quiet=not get_state(ctx).debug)
    except SparkJobError as exc:
        raise CliError(str(exc), exc.exit_code) from None


def export(
    ctx: typer.Context,
    table: options.Table,
    out: Annotated[str, typer.Option("--out", help="Output directory (one file per partition).", show_default=False)],
    format: Format = "parquet",
    where: options.Where = None,
    partitions: Annotated[
        int | None, typer.Option("--partitions", help="Parallel read partitions (default: Spark's parallelism).")
    ] = None,
    master: Master = None,
    mode: Annotated[str, typer.Option("--mode", help="error|overwrite: what to do if --out exists.")] = "error",
    changes: Annotated[
        bool,
        typer.Option(
            "--changes", help="Export the recorded change events (columns plus _revision, _op, _version, _time)."
        ),
    ] = False,
    since: Annotated[
        int | None,
        typer.Option("--since", help="With --changes: the events after this revision (default: oldest kept)."),
    ] = None,
    output: options.Output = None,
) -> None:
    """Export a table to files with Spark; prints the rows exported.

    Reads in --partitions key ranges in parallel (--where runs in the provider) and
    writes at most one file per partition, and the table's spec as _kvctl_spec.json
    (a local folder; kvctl import --create takes it back). Bytes are base64 and
    timestamps ISO 8601 in csv and json. --changes exports the table's change events
    instead (no spec file: the files hold events, not rows).
    """
    _require_spark("export")
    _choice(format, FORMATS, "--format")
    _choice(mode, ("error", "overwrite"), "--mode")
    if partitions is not None and partitions < 1:
        raise CliError(f"--partitions must be a positive integer, got {partitions}")
    if since is not None and not changes:
        raise CliError("--since goes with --changes: kvctl export T --changes --since REV")
    if changes and where is not None:
        raise CliError("--where filters rows, not change events: leave it out with --changes")
    if since is not None and since < 0:
        raise CliError(f"--since must be a revision (a non-negative integer), got {since}")
    state = get_state(ctx)
    url = check_url(state.settings().url)
    provider = state.provider(create=False)
    spec = fed_spec(provider, table) if changes else provider.admin.get_spec(table)
    if where is not None:
        spi.parse_where(where, spec)
    if since is not None:
        next(iter(provider.changes(table, since=since, limit=1)), None)  # a compacted --since: exit 1 now
    local = local_path(out)
    if mode == "error" and local is not None and os.path.exists(local):
        raise NotDone(f"{out} already exists; nothing was written (use --mode overwrite to replace it)")
    state.close()  # Spark's workers open their own connections
    from kvctl.spark.transfer import export_table  # lazy: pyspark is heavy and optional

    spark = _session(ctx, master)
    result = _run(
        lambda progress: export_table(
            spark,
            url,
            table,
            out,
            format=format,
            where=where,
            partitions=partitions,
            mode=mode,
            progress=progress,
            changes=changes,
            since=since,
        )
    )
    print(
        f"exported {_count(result.rows, 'change event' if changes else 'row')} of {table!r} to {out} ({format}, {_count(result.tasks, 'partition')})",
        file=sys.stderr,
    )
    print_value(result.rows)


def import_(
    ctx: typer.Context,
    table: options.Table,
    path: Annotated[str, typer.Option("--in", help="Input file or directory.", show_default=False)],
    format: Annotated[
        str | None,
        typer.Option("--format", help="parquet|csv|json|orc (default: by the --in suffix or the folder's files)."),
    ] = None,
    mode: Annotated[
        str,
        typer.Option("--mode", help="append (upsert) | overwrite (replace the table's rows atomically; needs --yes)."),
    ] = "append",
    create: Annotated[
        bool,
        typer.Option(
            "--create", help="Create the table: with the spec a kvctl export wrote, else from the file's schema."
        ),
    ] = False,
    pk: Annotated[
        str | None,
        typer.Option("--pk", help="Key columns for --create, in key order (a,b); optional with an export's spec."),
    ] = None,
    master: Master = None,
    yes: options.Yes = False,
    output: options.Output = None,
) -> None:
    """Import files into a table with Spark; prints the rows imported.

    A folder kvctl export wrote round-trips: its format comes from its data files
    and --create takes its _kvctl_spec.json (indexes, change feed and ttl kept).
    Input column names that are not column names are renamed as table create --from
    names them (stderr lists each one); --pk takes the new names.

    Every row is checked against the table's types first: a bad value fails with
    exit 2, naming the column and value, and nothing is written. --mode overwrite
    loads into a staging table and swaps it in at the end: a failed or killed
    import leaves the old rows untouched.
    """
    _require_spark("import")
    _choice(mode, ("append", "overwrite"), "--mode")
    if mode == "overwrite" and not yes:
        raise CliError("--mode overwrite replaces the table's rows: add --yes (nothing was changed)")
    if pk is not None and not create:
        raise CliError("--pk goes with --create: --create --pk a,b")
    key = None if pk is None else [c.strip() for c in pk.split(",") if c.strip()]
    if key is not None and not key:
        raise CliError("--pk needs at least one column name")
    state = get_state(ctx)
    url = check_url(state.settings().url)
    admin = state.provider(create=True).admin
    if create and admin.exists(table):
        raise spi.TableExistsError(f"table {table!r} already exists; import into it without --create")
    if not create and not admin.exists(table):
        raise spi.TableNotFoundError(f"table {table!r} does not exist; create it, or use --create [--pk a,b]")
    fmt = input_format(path, format)
    local = local_path(path)
    if local is not None and not os.path.exists(local):
        raise CliError(f"{path} does not exist; nothing was imported")
    spec = spec_for_import(path, table, key) if create else None  # a kvctl export's folder: its spec
    state.close()
    from kvctl.spark.transfer import import_table  # lazy: pyspark is heavy and optional

    spark = _session(ctx, master)
    tally = Tally()
    tally.floor = True  # a failed Spark task's batches are not counted
    with reporting(tally, lambda: f"to finish (a rerun upserts): {rerun(ctx, without={'--create': 0, '--pk': 1})}"):
        result = _run(
            lambda progress: import_table(
                spark,
                url,
                table,
                path,
                format=fmt,
                mode=mode,
                create_pk=key if spec is None else None,
                create_spec=spec,
                progress=progress,
            ),
            tally if mode == "append" else None,  # overwrite: nothing stays unless every task is done
        )
    if result.replaced:
        from kvctl.bulk import report_repeats  # lazy: the file readers (~7 ms), only for repeated keys

        report_repeats(result.rows + result.replaced, result.rows)
    print(f"imported {_count(result.rows, 'row')} from {path} into {table!r} ({fmt})", file=sys.stderr)
    print_value(result.rows)


def register(app: typer.Typer) -> None:
    """Add the ``export`` and ``import`` commands."""
    app.command("export", cls=Command)(export)
    app.command("import", cls=Command)(import_)
