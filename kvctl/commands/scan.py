"""Range reads: ``scan`` (pages, ``--all`` streaming, ``--explain``, ``--count``) and ``count``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer

import spi
from kvctl import options, paging
from kvctl.common import open_table, parse_columns, parse_where
from kvctl.completion import complete_column
from kvctl.errors import CliError
from kvctl.groups import Command
from kvctl.output import RowPrinter, print_value
from kvctl.rowtext import with_versions
from kvctl.state import get_state
from kvctl.words import build_range, prefix_as_like
from spi.planner import needs_sort
from spi.sorting import explain_sorted, sorted_scan
from spi.types import FieldType


def scan(
    ctx: typer.Context,
    table: options.Table,
    prefix: options.Prefix = None,
    ge: options.Ge = None,
    gt: options.Gt = None,
    le: options.Le = None,
    lt: options.Lt = None,
    where: options.Where = None,
    order_by: Annotated[
        str | None,
        typer.Option("--order-by", help="Any column (one without an index is sorted).", autocompletion=complete_column),
    ] = None,
    desc: Annotated[bool, typer.Option("--desc", help="Reverse the whole order.")] = False,
    columns: options.Columns = None,
    keys_only: Annotated[bool, typer.Option("--keys-only", help="Print only the key columns.")] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", help=f"At most N rows (default {paging.DEFAULT_LIMIT}).")
    ] = None,
    all_rows: Annotated[bool, typer.Option("--all", help="Stream every row (no limit).")] = False,
    after: Annotated[str | None, typer.Option("--after", help="Continue after this token (printed on stderr).")] = None,
    versions: Annotated[
        bool, typer.Option("--versions", help="Add each row's _version and _expires_at (null: never expires).")
    ] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Print how the scan would run, read nothing.")] = False,
    count: Annotated[bool, typer.Option("--count", help="Print only the number of matching rows.")] = False,
    output: options.Output = None,
) -> None:
    """Print rows in key order (or --order-by), at most --limit of them.

    When more rows may remain, stderr says how many were shown and the --after TOKEN
    that continues the scan (a following page may be empty). --order-by a column
    without an index sorts every matching row (in bounded memory) and says so on stderr.
    """
    wanted = paging.wanted_rows(limit, all_rows)
    if keys_only and columns is not None:
        raise CliError("--keys-only and --columns cannot be used together")
    if explain and count:
        raise CliError("--explain and --count cannot be used together")
    handle, spec = open_table(ctx, table, create=False)
    rng = build_range(spec, prefix=prefix, ge=ge, gt=gt, le=le, lt=lt)
    expr = parse_where(spec, where)
    cols: list[str] | None = [] if keys_only else parse_columns(spec, columns)
    sort_by = order_by if order_by is not None and not count and needs_sort(spec, order_by) else None
    if explain:
        if sort_by is None:
            print(handle.explain(rng, where=expr, order_by=order_by))
        else:
            print(explain_sorted(handle, rng, where=expr, order_by=sort_by, descending=desc))
        return
    if count:
        n = handle.count(rng, where=expr)
        print_value(n)
        if n == 0:
            _prefix_hint(handle, spec, prefix, where, expr)
        return
    query: dict[str, Any] = {"where": expr, "order_by": order_by, "descending": desc, "columns": cols}
    pages = sorted_rows = None
    rows: Iterator[Any]
    if sort_by is not None:
        rows = sorted_rows = sorted_scan(handle, rng, limit=wanted, after=after, **query)
    elif wanted is None and after is None:  # --all from the start: the provider's own streamed scan
        rows = handle.scan(rng, **query)
    else:
        pages = paging.Pages(lambda n, token: handle.scan_page(rng, limit=n, after=token, **query), wanted, after)
        rows = pages.rows()
    shown = [c for c in spec.columns if cols is None or c in cols or spec.is_key(c)]
    types = {c: spec.type_of(c) for c in shown}
    if versions:  # each row's version and expiry (null: never; put --ttl gives one on any table)
        types |= {"_version": FieldType.LONG, "_expires_at": FieldType.TIMESTAMP}
    printer = RowPrinter(get_state(ctx).output_format(output), list(types), types=types, keys=spec.primary_key)
    printer.add_all(with_versions(rows) if versions else rows)
    printer.close()
    token = None if pages is None else pages.token
    if sorted_rows is not None:
        token = sorted_rows.next_token
        add_index = f"kvctl table alter {spec.name} --add-index {sort_by}"
        print(
            f"sorted {sorted_rows.count} rows (no index on {sort_by}; {add_index} makes this a scan)", file=sys.stderr
        )
    paging.continue_hint(printer.count, token, default_limit=limit is None)
    if printer.count == 0 and after is None and limit != 0:
        _prefix_hint(handle, spec, prefix, where, expr)


def count(
    ctx: typer.Context,
    table: options.Table,
    prefix: options.Prefix = None,
    ge: options.Ge = None,
    gt: options.Gt = None,
    le: options.Le = None,
    lt: options.Lt = None,
    where: options.Where = None,
    group_by: options.GroupBy = None,
    output: options.Output = None,
) -> None:
    """Print how many rows are in the range and match --where.

    With --group-by, one object per group of those columns' values (ordered as key
    values are, nulls first) with its "count".
    """
    handle, spec = open_table(ctx, table, create=False)
    rng = build_range(spec, prefix=prefix, ge=ge, gt=gt, le=le, lt=lt)
    expr = parse_where(spec, where)
    if group_by is not None:
        from kvctl.commands.stats import column_list, count_groups  # lazy: only count --group-by loads it

        count_groups(ctx, handle, spec, rng, expr, column_list([group_by]), output)
        return
    n = handle.count(rng, where=expr)
    print_value(n)
    if n == 0:
        _prefix_hint(handle, spec, prefix, where, expr)


def _prefix_hint(
    handle: Any, spec: spi.TableSpec, prefix: list[str] | None, where: str | None, expr: spi.Expr | None
) -> None:
    """After an empty result: ``--prefix`` on a string column matches whole values; when
    rows do start with the value, say on stderr which ``--where`` finds them."""
    alt = prefix_as_like(spec, prefix, where) if prefix else None
    if alt is None:
        return
    condition = alt.where if expr is None else expr & alt.where
    if next(iter(handle.scan(alt.range, where=condition, limit=1, columns=[])), None) is None:
        return
    print(f"hint: {alt.hint}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add scan and count to ``app``."""
    app.command(cls=Command)(scan)
    app.command(cls=Command)(count)
