"""``kvctl copy SRC_URL DST_URL [TABLE... | --all]``: tables from one store to another
(each store a URL or a config profile's name, :meth:`kvctl.state.State.store_url`).

Each table's spec (created on the destination when missing) and its rows with their
versions, read page by page from the source (a short transaction each, so writers of
the source are never held up) and streamed into the destination's bulk load in
batches, so memory stays flat whatever the table's size. ``--mode overwrite`` loads into a staging table and swaps it in
(:mod:`spi.staging`): a failed or killed copy leaves the old rows as they were.

``--follow`` then applies the source's change events as they commit
(:mod:`kvctl.follow`): each table's copy is taken after reading the source revision
it records as the table's applied position (:mod:`spi.applied`, under the source
name ``TABLE@SOURCE_STORE_ID``), so a run killed and started again with ``--mode
append`` copies no table whose position was recorded and resumes after it.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer

import spi
from kvctl import bulk, options
from kvctl.errors import CliError, NotDone
from kvctl.feeds import check_feeds, no_feed
from kvctl.groups import Command
from kvctl.output import RowPrinter
from kvctl.partway import Tally, reporting, rerun
from kvctl.replay import Target
from kvctl.state import get_state
from spi import applied
from spi.spec import plan_schema_change, validate_name

MODES = ("error", "append", "overwrite")


@dataclass(frozen=True)
class Plan:
    """One table to copy: its source spec and whether the destination has the table."""

    spec: spi.TableSpec
    exists: bool


def _table_names(names: list[str] | None) -> list[str] | None:
    """The TABLE arguments, each a valid table name (exit 2 otherwise)."""
    return None if names is None else [validate_name(n, "table") for n in names]


def copy(
    ctx: typer.Context,
    src_url: Annotated[
        str,
        typer.Argument(
            metavar="SRC_URL", help="The store to copy from: a provider URL or a profile name.", show_default=False
        ),
    ],
    dst_url: Annotated[
        str,
        typer.Argument(
            metavar="DST_URL", help="The store to copy into: a provider URL or a profile name.", show_default=False
        ),
    ],
    tables: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TABLE...", help="The tables to copy (or --all).", callback=_table_names, show_default=False
        ),
    ] = None,
    all_tables: Annotated[bool, typer.Option("--all", help="Copy every table of the source.")] = False,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="error: exit 1 if a destination table holds rows | append: upsert | "
            "overwrite: replace the destination's rows atomically (needs --yes).",
        ),
    ] = "error",
    yes: options.Yes = False,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Rows per atomic batch.")] = 10_000,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", help="Then apply the source's change events as they commit, until interrupted (see docs)."
        ),
    ] = False,
    until_caught_up: Annotated[
        bool, typer.Option("--until-caught-up", help="With --follow: stop once every committed change is applied.")
    ] = False,
    output: options.Output = None,
) -> None:
    """Copy tables (specs, rows and versions) between two stores; prints the rows copied per table.

    SRC_URL and DST_URL are each a provider URL or the name of a profile of the config
    file (a word without ':'; its password_env applies).

    A provider swap, a backup into a rocksdb: path or a restore from one. A missing
    destination table is created with the source's spec; an existing one keeps its
    spec, which must take the source's rows (exit 2 otherwise). The change history
    is not copied. --follow keeps the destination up to date (lag on stderr): the
    provider swap recipe is in docs/cutover.md.
    """
    if mode not in MODES:
        raise CliError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "overwrite" and not yes:
        raise CliError("--mode overwrite replaces the destination tables' rows: add --yes (nothing was changed)")
    if bool(tables) == all_tables:
        raise CliError("name the tables to copy, or give --all (not both)")
    if until_caught_up and not follow:
        raise CliError("--until-caught-up goes with --follow")
    bulk.check_batch_size(batch_size)
    state = get_state(ctx)
    fmt = state.output_format(output)
    src_url, dst_url = state.store_url(src_url, "argument SRC_URL"), state.store_url(dst_url, "argument DST_URL")
    with spi.connect(src_url, create=False) as source, spi.connect(dst_url) as destination:
        if source.store_id == destination.store_id:
            raise CliError(f"the source and the destination are the same store ({source.store_id}); nothing was copied")
        plans = _plan(source, destination, tables or source.admin.list_tables(), mode)
        if follow:
            _check_followable(source, plans)
            applied.ensure_table(destination)
        start = source.revision() if follow else 0  # before any row is read: see kvctl.follow
        targets = {p.spec.name: Target(p.spec.name, f"{p.spec.name}@{source.store_id}") for p in plans}
        positions: dict[str, int] = {}
        printer = RowPrinter(fmt, ["table", "rows"])
        tally = Tally()
        with reporting(tally, lambda: _finish(ctx, mode, tally)):
            try:
                for plan in plans:
                    target = targets[plan.spec.name]
                    resume = (
                        applied.position(destination, target.table, target.source) if follow and plan.exists else None
                    )
                    if resume is not None and mode == "append":
                        print(f"{target.table}: copied before; following from revision {resume}", file=sys.stderr)
                        positions[target.table] = resume
                        printer.add({"table": target.table, "rows": 0})
                        continue
                    rows = _copy_table(source, destination, plan, mode, batch_size, tally)
                    if follow:
                        _record(destination, target, start)
                        positions[target.table] = start
                    printer.add({"table": plan.spec.name, "rows": rows})
            finally:
                printer.close()
            if follow:
                from kvctl.follow import follow as follow_changes

                tally.revisions = 0  # what it says from here on
                follow_changes(source, destination, targets, positions, tally, until_caught_up=until_caught_up)


def _finish(ctx: typer.Context, mode: str, tally: Tally) -> str:
    """The command that finishes a copy stopped part-way: with ``--mode append``
    (``overwrite`` before following: the same command)."""
    if tally.revisions is not None:
        return f"to resume (nothing is copied or applied twice): {rerun(ctx, mode='append')}"
    if mode == "overwrite":
        return f"to finish (it copies every table again): {rerun(ctx)}"
    return f"to finish (it upserts, versions kept): {rerun(ctx, mode='append')}"


def _plan(source: spi.Provider, destination: spi.Provider, names: list[str], mode: str) -> list[Plan]:
    """Check every table before copying any: it exists in the source, the destination's
    table (if any) takes its rows (exit 2) and, in ``error`` mode, holds none (exit 1)."""
    plans = []
    for name in dict.fromkeys(names):
        spec = source.admin.get_spec(name)
        exists = destination.admin.exists(name)
        if exists:
            _check_fits(spec, destination.admin.get_spec(name))
            if mode == "error" and next(iter(destination.table(name).scan(limit=1)), None) is not None:
                raise NotDone(
                    f"destination table {name!r} holds rows; use --mode append to upsert into it or "
                    "--mode overwrite --yes to replace them (nothing was copied)"
                )
        plans.append(Plan(spec, exists))
    return plans


def _record(destination: spi.Provider, target: Target, revision: int) -> None:
    """Record ``revision`` as the applied position of ``target`` (after its copy)."""
    with destination.transaction() as tx:
        applied.record(tx, target.table, target.source, revision)


def _check_followable(source: spi.Provider, plans: list[Plan]) -> None:
    """``--follow`` needs a change feed on every source table (exit 2 otherwise)."""
    check_feeds(source)
    for plan in plans:
        if not plan.spec.changes:
            raise CliError(f"{no_feed(plan.spec.name)} on the source; nothing was copied")


def _check_fits(spec: spi.TableSpec, existing: spi.TableSpec) -> None:
    """The destination table ``existing`` must take every row of ``spec``: the same key,
    every column with the same type or a wider one (it may have more columns)."""
    try:
        plan_schema_change(spec, existing)
    except spi.IncompatibleSchemaError as exc:
        raise spi.IncompatibleSchemaError(
            f"destination table {spec.name!r} cannot take the source's rows: {exc}; nothing was copied"
        ) from None


def _copy_table(
    source: spi.Provider, destination: spi.Provider, plan: Plan, mode: str, batch_size: int, tally: Tally
) -> int:
    """Copy one table's rows (creating it first if missing), counted in ``tally`` as they
    commit (``overwrite``: once swapped in); the rows copied."""
    name = plan.spec.name
    if not plan.exists:
        destination.admin.create(plan.spec)
        print(f"created table {name!r} on {destination.url}", file=sys.stderr)
    if mode != "overwrite":
        load_mode = "upsert" if mode == "append" else "insert"
        return _stream(source, name, destination.table(name), load_mode, batch_size, tally)
    staging = destination.admin.create_staging(name)
    try:
        rows = _stream(source, name, destination.table(staging), "insert", batch_size, None)
        try:
            with tally.committing():
                destination.admin.swap_rows(name, staging)  # the staging table now holds the old rows
                tally.rows += rows
        except spi.IncompatibleSchemaError:
            raise spi.IncompatibleSchemaError(
                f"destination table {name!r} was altered while its rows were copied; its rows are unchanged "
                "(run the copy again)"
            ) from None
    finally:
        destination.admin.drop(staging, missing_ok=True)
    return rows


def _stream(source: spi.Provider, name: str, target: Any, mode: str, batch_size: int, tally: Tally | None) -> int:
    """Load the rows of the source table ``name`` into ``target``, versions kept, with
    a progress bar on a terminal, counting them in ``tally`` (if given) as they commit.
    The source is read page by page, each page in a short transaction of its own (as
    ``scan --all`` does), so the copy holds nothing on the source between pages."""
    table = source.table(name)
    update, finish = bulk.progress_bar(table.count(), f"copying {name}") if sys.stderr.isatty() else (None, None)
    progress = update if tally is None else tally.progress(update)
    try:
        with contextlib.nullcontext() if tally is None else tally.committing():
            rows = table.scan()
            return int(target.load(rows, mode=mode, batch_size=batch_size, progress=progress, keep_versions=True))
    except spi.KvError as exc:
        exc.args = (f"copying {name!r}: {exc}",)
        raise
    finally:
        if finish is not None:
            finish()


def register(app: typer.Typer) -> None:
    """Add the ``copy`` command."""
    app.command("copy", cls=Command)(copy)
