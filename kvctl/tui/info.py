"""What the table info view (``i``) shows, computed without UI code (each function
blocks; the info screen calls them from thread workers), in bounded memory:

- Every column's nulls, min and max (numbers, timestamps and strings; ``bool`` and
  ``bytes`` columns get their nulls only), first what the key and the indexes
  answer at once (:func:`quick_stats`: a few reads of one row or one index run each,
  whatever the table's size), then the other columns, which take reading every row:
  on a server (PostgreSQL) one ``table.aggregate`` call and a ``count`` of each
  other column's nulls, run in the server (:func:`server_stats`); on an embedded
  store the pass that measures the size (:func:`read_rows`).
- :func:`read_rows`: one streamed scan of the rows adding up the bytes of their
  values (strings and bytes their length in UTF-8/bytes, numbers and timestamps 8,
  bool 1): the size of the data whatever the store, with no provider call the SPI
  lacks; the same pass takes the statistics of the columns asked for.
  :func:`store_bytes` adds, for an embedded store (a RocksDB directory), the bytes
  of its files on disk (every table's).
- :func:`histogram`: a numeric column's values counted into :data:`BUCKETS` equal
  buckets between its min and max, over a streamed scan of that column only; an
  integer column's buckets hold whole numbers (``1 - 35``, ``36 - 70``; fewer buckets
  when there are fewer values than :data:`BUCKETS`). :func:`histogram_column` picks
  the column drawn first: the first numeric column that is not a key column.
- :func:`change_rate`: a change-fed table's events per minute over the last
  :data:`MINUTES` minutes, streamed from its feed and counted into one bucket a
  minute (events outside the window are only skipped).
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import spi
from spi.aggregate import STAT_TYPES, ColumnStats, aggregate_rows

BUCKETS = 10
"""Bars of a histogram."""
STEP = 10_000
"""Rows a streamed pass reads between two looks at whether to go on."""
MINUTES = 60
"""Minutes of change events the sparkline shows (the last hour, one bar a minute)."""
UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(size: int) -> str:
    """``512 B``, ``1.5 KiB``, ``3.2 GiB``."""
    value = float(size)
    for unit in UNITS:
        if value < 1024 or unit == UNITS[-1]:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Column:
    """One column's nulls, min and max as far as known: ``nulls`` None until counted;
    ``ranged`` once ``min`` and ``max`` are taken (None: no value), never for a type
    without them (:data:`STAT_TYPES`)."""

    name: str
    type: spi.FieldType
    nulls: int | None = None
    min: Any = None
    max: Any = None
    ranged: bool = False

    @property
    def known(self) -> bool:
        """True once everything the column has is taken."""
        return self.nulls is not None and (self.ranged or self.type not in STAT_TYPES)


def numeric_columns(spec: spi.TableSpec) -> list[str]:
    """The columns a histogram can be drawn of, in the spec's order."""
    return [f.name for f in spec.fields if f.type.is_numeric]


def histogram_column(spec: spi.TableSpec) -> str | None:
    """The column whose histogram shows first: the first numeric column that is not a
    key column (a key's values are spread evenly: its histogram tells nothing), else
    the first numeric column; None without one."""
    numeric = numeric_columns(spec)
    return next((c for c in numeric if not spec.is_key(c)), next(iter(numeric), None))


def quick_stats(table: spi.Table, spec: spi.TableSpec) -> list[Column]:
    """Every column (in the spec's order) with what the key and the indexes answer
    without reading every row: a key column has no nulls, and the first key
    column's min and max are the first and the last row's; an indexed column's nulls
    are its index's null entries, counted, and its min and max the first and the
    last of its other entries (an ordered scan of one row each way: nulls come first).
    The other columns' statistics are left to read (:func:`server_stats`,
    :func:`read_rows`)."""
    first = spec.primary_key[0]
    columns = []
    for f in spec.fields:
        column = Column(f.name, f.type)
        ranged = f.type in STAT_TYPES
        if spec.is_key(f.name):
            column = replace(column, nulls=0)
            if ranged and f.name == first:
                column = _ranged(column, *_ends(table, f.name, None))
        elif spec.is_indexed(f.name):
            column = replace(column, nulls=table.count(where=spi.col(f.name).is_null()))
            if ranged:
                column = _ranged(column, *_ends(table, f.name, f.name))
        columns.append(column)
    return columns


def _ranged(column: Column, low: Any, high: Any) -> Column:
    """``column`` with its min and max."""
    return replace(column, min=low, max=high, ranged=True)


def _ends(table: spi.Table, column: str, order_by: str | None) -> tuple[Any, Any]:
    """The least and the greatest value of ``column`` (None: none), from the first row
    of a scan in the order of the key (``order_by`` None) or of its index, each way."""
    where = None if order_by is None else spi.col(column).not_null()
    found = [
        table.scan_page(where=where, order_by=order_by, descending=descending, limit=1, columns=[column]).rows
        for descending in (False, True)
    ]
    low, high = (rows[0][column] if rows else None for rows in found)
    return low, high


def server_stats(table: spi.Table, spec: spi.TableSpec, columns: list[Column]) -> list[Column]:
    """``columns`` not known yet, taken in the server: one ``aggregate`` call for the
    numbers, timestamps and strings, a ``count`` of the nulls of the others."""
    left = [c for c in columns if not c.known]
    stat = [c.name for c in left if c.type in STAT_TYPES]
    stats = table.aggregate(columns=stat)[0].stats if stat else {}
    taken = []
    for c in left:
        if c.name in stats:
            taken.append(_column(c, stats[c.name]))
        else:
            taken.append(replace(c, nulls=table.count(where=spi.col(c.name).is_null())))
    return taken


def _column(column: Column, stats: ColumnStats) -> Column:
    """``column`` with the statistics taken of it."""
    counted = replace(column, nulls=stats.nulls)
    return _ranged(counted, stats.min, stats.max) if column.type in STAT_TYPES else counted


@dataclass(frozen=True)
class Pass:
    """What one pass over every row found: the rows, the bytes of their values and the
    statistics of the columns it was asked for."""

    rows: int
    size: int
    columns: list[Column]


def read_rows(
    rows: Iterable[spi.Row], spec: spi.TableSpec, columns: list[Column], keep_going: Callable[[int], bool]
) -> Pass | None:
    """One streamed pass over ``rows``: the bytes of their values and the statistics
    of ``columns`` (bounded memory); None if ``keep_going(rows read so far)``, asked
    every :data:`STEP` rows, turned False."""
    size = 0
    stopped = False

    def measured() -> Iterator[spi.Row]:
        nonlocal size, stopped
        for n, row in enumerate(rows):
            if n % STEP == 0 and not keep_going(n):
                stopped = True
                return
            size += sum(value_bytes(v) for v in row.values())
            yield row

    (group,) = aggregate_rows(spec, measured(), (), tuple(c.name for c in columns))
    if stopped:
        return None
    return Pass(group.count, size, [_column(c, group.stats[c.name]) for c in columns])


def value_bytes(value: Any) -> int:
    """The bytes one value takes as data (see the module docstring)."""
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, bool):
        return 1
    return 8


def store_bytes(url: str) -> int | None:
    """The bytes on disk of an embedded store's directory (every table), or None for a
    store that is not a local directory (a server, memory)."""
    scheme, _, rest = url.partition(":")
    if scheme != "rocksdb":
        return None
    path = Path(rest.removeprefix("//").partition("?")[0]).expanduser()
    if not path.is_dir():
        return None
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(folder) / name).stat().st_size
            except OSError:  # a file compaction just removed
                continue
    return total


@dataclass(frozen=True)
class Histogram:
    """A column's values in equal buckets from ``low`` to ``high`` (``counts[i]``: the
    values in bucket i; the last bucket includes ``high``); ``nan`` and ``infinite``
    values are counted apart. ``whole``: an integer column, each bucket ``step`` whole
    numbers wide (``low`` and ``high`` exact integers)."""

    column: str
    low: float
    high: float
    counts: tuple[int, ...]
    nan: int = 0
    infinite: int = 0
    whole: bool = False
    step: int = 1

    def bounds(self, i: int) -> tuple[float, float]:
        """The low and high value of bucket ``i`` (of a whole bucket: the first and last
        number in it)."""
        if self.whole:
            first = self.low + i * self.step
            return first, min(first + self.step - 1, self.high)
        step = (self.high - self.low) / len(self.counts)
        return self.low + i * step, self.low + (i + 1) * step

    def bucket(self, number: float) -> int:
        """The bucket ``number`` (between ``low`` and ``high``) falls in."""
        if self.whole:
            at = int(number - self.low) // self.step
        else:
            at = 0 if self.high == self.low else int((number - self.low) / (self.high - self.low) * len(self.counts))
        return min(max(at, 0), len(self.counts) - 1)


def _empty_histogram(column: str, low: Any, high: Any, whole: bool = False) -> Histogram:
    """The buckets for values from ``low`` to ``high`` (None: no value), not counted yet:
    :data:`BUCKETS` of them (one when ``low == high``); a ``whole`` column's hold
    ``step`` whole numbers each (fewer buckets when there are fewer numbers); none
    for an infinite bound."""
    if low is None or high is None:
        return Histogram(column, 0.0, 0.0, ())
    if whole:
        numbers = int(high) - int(low) + 1
        step = -(-numbers // BUCKETS)  # ceiling division, in exact integers
        return Histogram(column, int(low), int(high), (0,) * -(-numbers // step), whole=True, step=step)
    lo, hi = float(low), float(high)
    buckets = 0 if not (math.isfinite(lo) and math.isfinite(hi)) else BUCKETS if hi > lo else 1
    return Histogram(column, lo, hi, (0,) * buckets)


def histogram(
    values: Iterable[Any],
    column: str,
    low: Any,
    high: Any,
    keep_going: Callable[[], bool] = lambda: True,
    *,
    whole: bool = False,
) -> Histogram | None:
    """The :class:`Histogram` of ``values`` between ``low`` and ``high`` (the column's
    min and max; None: no value), streamed; None if ``keep_going()`` turned False.
    ``whole``: the values are integers (see :func:`_empty_histogram`)."""
    shape = _empty_histogram(column, low, high, whole)
    if not shape.counts:
        return shape
    counts = list(shape.counts)
    nan = infinite = 0
    for n, value in enumerate(values):
        if n % 10_000 == 0 and not keep_going():
            return None
        if value is None:
            continue
        number = value if whole else float(value)
        if math.isnan(number):
            nan += 1
        elif math.isinf(number):
            infinite += 1
        else:
            counts[shape.bucket(number)] += 1
    return replace(shape, counts=tuple(counts), nan=nan, infinite=infinite)


def change_rate(
    provider: spi.Provider, table: str, now: dt.datetime | None = None, keep_going: Callable[[], bool] = lambda: True
) -> list[int] | None:
    """Change events of ``table`` per minute over the last :data:`MINUTES` minutes,
    oldest first (streamed from the feed: memory is the buckets); None if
    ``keep_going()`` turned False."""
    now = now or dt.datetime.now(dt.UTC)
    start = now - dt.timedelta(minutes=MINUTES)
    counts = [0] * MINUTES
    since = 0
    while True:
        try:
            for n, event in enumerate(provider.changes(table, since=since)):
                if n % 10_000 == 0 and not keep_going():
                    return None
                since = event.revision
                if event.time >= start:
                    minute = int((event.time - start).total_seconds() // 60)
                    counts[min(minute, MINUTES - 1)] += 1
            return counts
        except spi.RevisionCompactedError as exc:  # the oldest events are gone: from the first kept
            if exc.oldest <= since:
                raise
            since = exc.oldest
