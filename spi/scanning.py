"""Scan helpers of :class:`spi.table.TableBase` shared with the auto-commit handles:
pages with their resume tokens, projections, column batches, multi-range merges."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any

from spi.errors import InvalidFieldError
from spi.filters import Expr
from spi.keys import Range
from spi.primitives import ColumnBatch, ScanRequest, sort_position
from spi.row import Page, Row
from spi.spec import TableSpec
from spi.tokens import ScanPosition, decode_token, encode_token
from spi.types import sort_key
from spi.validate import check_limit


def read_page(
    spec: TableSpec,
    scan_list: Callable[[ScanRequest], list[Row]],
    request: ScanRequest,
    after: str | None,
    proj: tuple[str, ...] | None,
) -> Page:
    """The page of ``request`` (its limit one more than the page size) after the token
    ``after``, projected to ``proj``, with the token that resumes after it."""
    assert request.limit is not None
    n = request.limit - 1
    position = None
    if after is not None:
        position = decode_token(spec, after, order_by=request.order_by, descending=request.descending)
    if n == 0:
        keep = position or ScanPosition(request.order_by, request.descending, None)
        return Page([], encode_token(spec, keep))
    rows = scan_list(
        ScanRequest(
            request.key_range,
            request.where,
            request.order_by,
            request.descending,
            None if position is None else position.last,
            n + 1,
        )
    )
    page = rows[:n]
    if proj is not None:
        page = [project(r, proj) for r in page]
    if len(rows) <= n:
        return Page(page, None)
    last = sort_position(spec, rows[n - 1], request.order_by)
    return Page(page, encode_token(spec, ScanPosition(request.order_by, request.descending, last)))


def _key_sort(spec: TableSpec) -> Callable[[Row], tuple[Any, ...]]:
    cols = spec.primary_key
    return lambda row: tuple(sort_key(row[c]) for c in cols)


def transpose(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> ColumnBatch:
    """Rows as a :data:`ColumnBatch` of ``columns``."""
    # Each row's values as one mapping read column by column in C (a Row's
    # ``mapping``: a row's own ``row[c]`` is a Python call per value).
    values = [getattr(row, "mapping", row) for row in rows]
    return {c: list(map(itemgetter(c), values)) for c in columns}


def project(row: Row, columns: tuple[str, ...]) -> Row:
    """``row`` with only ``columns`` (its version and expiry kept)."""
    return Row({c: row[c] for c in columns}, row.version, row.expires)


def merge_scans(
    spec: TableSpec,
    scan: Callable[..., Iterator[Row]],
    ranges: Sequence[Range],
    *,
    where: Expr | None,
    limit: int | None,
    columns: Iterable[str] | None,
) -> Iterator[Row]:
    """Merge per-range scans in key order, dropping rows seen in an earlier range."""
    n = check_limit(limit)
    cols = None if columns is None else list(columns)
    if isinstance(ranges, Range):
        raise InvalidFieldError("multi_scan takes a list of ranges")
    streams = [scan(r, where=where, columns=cols) for r in ranges]
    if n == 0:
        return iter(())
    key = _key_sort(spec)

    def merged() -> Iterator[Row]:
        previous = None
        for row in heapq.merge(*streams, key=key):
            k = key(row)
            if k != previous:
                previous = k
                yield row

    out = merged()
    return out if n is None else itertools.islice(out, n)
