"""Aggregates: ``stats`` (per-column statistics, optionally per group) and the groups
``count --group-by`` prints, both from one ``table.aggregate`` call (PostgreSQL
computes them in the server).

Output (CLI.md): one object per group, groups ordered as key values are; ``-o json``
one array (``stats`` without ``--group-by``: one object), ``ndjson`` one object a
line. ``stats`` nests each column's statistics (``{"total": {"min": ..., "max": ...,
"nulls": N, "sum": x, "avg": x}}``, ``sum``/``avg`` for numbers only); ``csv``,
``tsv`` and ``table`` flatten them to columns ``total.min``, ``total.max``...
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

import typer

import spi
from kvctl import options
from kvctl.common import open_table, parse_where
from kvctl.completion import complete_column
from kvctl.errors import CliError
from kvctl.groups import Command
from kvctl.output import OutputFormat, RowPrinter
from kvctl.state import get_state
from kvctl.words import build_range
from spi.aggregate import Group
from spi.textvalues import to_json_value
from spi.types import FieldType

COUNT = "count"
"""The output field holding a group's row count."""
STATS = ("min", "max", "nulls", "sum", "avg")
"""The statistics of a number column, in output order (other columns: the first three)."""


def column_list(words: Iterable[str] | None) -> list[str]:
    """``a,b`` words (comma lists, repeatable) → column names, in order."""
    return [c.strip() for word in words or () for c in word.split(",") if c.strip()]


def check_names(group_by: Sequence[str], columns: Sequence[str]) -> None:
    """The output fields must not collide: a group column named ``count`` or a column
    both grouped and aggregated is bad input (exit 2)."""
    if COUNT in group_by or COUNT in columns:
        raise CliError(
            f"a column named {COUNT!r} cannot be grouped or aggregated here: the output's row count is {COUNT!r}"
        )
    both = [c for c in columns if c in group_by]
    if both:
        raise CliError(f"column {both[0]!r} is in --group-by: it cannot also be a --column")


def _stat_types(ftype: FieldType) -> dict[str, FieldType]:
    """Each statistic of a column of ``ftype`` and the type of its value."""
    types = {"min": ftype, "max": ftype, "nulls": FieldType.LONG}
    if ftype.is_numeric:
        types |= {"sum": FieldType.LONG if ftype.is_integer else FieldType.DOUBLE, "avg": FieldType.DOUBLE}
    return types


def print_groups(
    fmt: OutputFormat, spec: spi.TableSpec, group_by: Sequence[str], columns: Sequence[str] | None, groups: list[Group]
) -> None:
    """Print ``groups`` as ``count --group-by`` (``columns`` None) or ``stats`` does."""
    head: dict[str, FieldType] = {c: spec.type_of(c) for c in group_by} | {COUNT: FieldType.LONG}
    stats = {c: _stat_types(spec.type_of(c)) for c in columns or ()}
    nested = fmt in (OutputFormat.json, OutputFormat.ndjson) and columns is not None
    if nested:  # values made JSON here: the printer renders only the top level
        printer = RowPrinter(fmt, [*head, *stats], single=not group_by and fmt is OutputFormat.json)
        for g in groups:
            row: dict[str, Any] = {**dict(zip(group_by, map(to_json_value, g.values))), COUNT: g.count}
            for c, kinds in stats.items():
                values = g.stats[c]._asdict()
                row[c] = {name: to_json_value(values[name]) for name in kinds}
            printer.add(row)
    else:
        types = head | {f"{c}.{name}": t for c, kinds in stats.items() for name, t in kinds.items()}
        printer = RowPrinter(fmt, list(types), types=types)
        for g in groups:
            flat = {**dict(zip(group_by, g.values)), COUNT: g.count}
            for c, kinds in stats.items():
                values = g.stats[c]._asdict()
                flat |= {f"{c}.{name}": values[name] for name in kinds}
            printer.add(flat)
    printer.close()


def count_groups(
    ctx: typer.Context, handle: Any, spec: spi.TableSpec, rng: Any, expr: Any, group_by: list[str], output: Any
) -> None:
    """``count --group-by``: the row count of each group."""
    check_names(group_by, [])
    groups = handle.aggregate(rng, where=expr, group_by=group_by)
    print_groups(get_state(ctx).output_format(output), spec, group_by, None, groups)


def stats(
    ctx: typer.Context,
    table: options.Table,
    prefix: options.Prefix = None,
    ge: options.Ge = None,
    gt: options.Gt = None,
    le: options.Le = None,
    lt: options.Lt = None,
    where: options.Where = None,
    group_by: options.GroupBy = None,
    column: Annotated[
        list[str] | None,
        typer.Option(
            "--column",
            help="A column to describe (repeat; default: every number and timestamp column).",
            autocompletion=complete_column,
        ),
    ] = None,
    output: options.Output = None,
) -> None:
    """Print count, min, max, nulls (and sum, avg for numbers) of columns, per group.

    One object per --group-by group (ordered as key values are), or one for all the
    rows in range matching --where. PostgreSQL computes them in the server.
    """
    handle, spec = open_table(ctx, table, create=False)
    rng = build_range(spec, prefix=prefix, ge=ge, gt=gt, le=le, lt=lt)
    expr = parse_where(spec, where)
    grouped = column_list([group_by] if group_by else None)
    columns = column_list(column)
    if not columns:
        wanted = [c for c in spec.columns if spec.type_of(c).is_numeric or spec.type_of(c) is FieldType.TIMESTAMP]
        columns = [c for c in wanted if c not in grouped and c != COUNT]
    check_names(grouped, columns)
    groups = handle.aggregate(rng, where=expr, group_by=grouped, columns=columns)
    print_groups(get_state(ctx).output_format(output), spec, grouped, columns, groups)


def register(app: typer.Typer) -> None:
    """Add stats to ``app``."""
    app.command(cls=Command)(stats)
