"""Comparing a table in two stores, row by row, at about the cost of a scan (``kvctl diff``).

>>> for d in spi.diff.compare(src, dst, "orders"):   # two providers (or one: other=)
...     print(d.as_dict())

:func:`compare` returns a :class:`TableDiff`: an iterator of :class:`Difference` in key
order (a row only in the source, only in the destination, or in both with different
values), whose :attr:`~TableDiff.stats` count what was compared once it is exhausted.

How (see :mod:`spi.checksum`): the source cuts its rows, in key order, into segments
of :data:`RANGE_ROWS` / :data:`FAN_OUT` rows (``table.segments``, a chunk of
:data:`FAN_OUT` segments at a time: PostgreSQL in one statement, other stores by a
scan); each chunk's keys make a key range, and the chunks' ranges cover the whole key
space. The destination computes the checksum of each range (``table.checksum``), on a
worker thread while the source hashes its next chunks. Only a range whose (count, checksum) differ is looked at again, segment by
segment: a segment of at most :data:`NARROW_ROWS` source rows is read from both sides
and merged by key, a bigger one is cut into :data:`FAN_OUT` smaller ones the same way.
So two equal tables cost about a scan of each, computed where the rows are and at the
same time, and memory holds a few chunks' segment lists and two rows at a time.

Values compare by the SPI's rules (:func:`spi.types.values_equal`: NaN equals NaN,
-0.0 equals 0.0; timestamps to the microsecond), ``int`` with ``long`` and ``float``
with ``double`` by value; ``versions=True`` compares row versions too (``_version``
in :attr:`Difference.changed`). Expiry is not compared; an expired row is not a row.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from spi.checksum import MASK, Checksum, Segment
from spi.errors import IncompatibleSchemaError, InvalidFieldError, TableNotFoundError
from spi.filters import Expr
from spi.keys import Range
from spi.protocols import Provider
from spi.row import Row
from spi.spec import TableSpec
from spi.types import FieldType, sort_key, values_equal
from spi.where import parse_where

RANGE_ROWS = 4096
"""Source rows per key range whose checksum the destination computes."""
FAN_OUT = 16
"""Segments per range: a differing range (or segment) is compared again in this many parts."""
NARROW_ROWS = 100
"""A differing segment of at most this many source rows is compared row by row."""
AHEAD = 4
"""Ranges whose destination checksums may be under way while the source hashes on."""
WORKERS = 4
"""Threads computing destination checksums (a range's segments are asked for at once).
The source is read only on the calling thread, which never waits for a worker while it
holds a read: one store on both sides (``TABLE:OTHER``) is safe, its readers take turns."""
VERSION = "_version"
"""The name a version difference has in :attr:`Difference.changed` and in the rows."""
SIDES = {"src": "source", "dst": "destination"}
"""The two sides of a comparison, as differences and messages name them."""

Side = Literal["src", "dst"]


def type_class(ftype: FieldType) -> str:
    """What a column's values compare as: ``int``/``long`` are one class, as are
    ``float``/``double``; every other type is its own."""
    if ftype.is_integer:
        return "integer"
    if ftype in (FieldType.FLOAT, FieldType.DOUBLE):
        return "floating-point"
    return str(ftype)


@dataclass(frozen=True)
class Difference:
    """A row that differs: ``only`` names the side that has it, or ``changed`` lists the
    columns (``_version`` with versions) whose values differ, with both rows (key and
    compared columns) in ``src`` and ``dst``."""

    table: str
    key: dict[str, Any]
    only: Side | None = None
    changed: tuple[str, ...] = ()
    src: dict[str, Any] | None = None
    dst: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The difference as ``kvctl diff`` prints it (CLI.md), values as stored."""
        if self.only is not None:
            return {"table": self.table, "key": self.key, "only": self.only}
        return {"table": self.table, "key": self.key, "changed": list(self.changed), "src": self.src, "dst": self.dst}


@dataclass
class DiffStats:
    """What a comparison found and did: rows compared (counted on the source),
    differences by kind, and its work: the key ranges whose checksums were compared and
    the rows read into this process to compare row by row (both sides)."""

    compared: int = 0
    only_src: int = 0
    only_dst: int = 0
    changed: int = 0
    checksums: int = 0
    rows_read: int = 0

    @property
    def differences(self) -> int:
        """Every difference found."""
        return self.only_src + self.only_dst + self.changed

    def summary(self, table: str) -> str:
        """The summary line of ``table`` (CLI.md)."""
        return (
            f"{table}: {self.compared} rows compared, {self.only_src} only in src, "
            f"{self.only_dst} only in dst, {self.changed} changed"
        )


@dataclass(frozen=True)
class Comparison:
    """What is compared between two specs: the key columns, the compared non-key columns
    (in the source's order), the columns left out because one side lacks them (column →
    the side that has it), and whether versions count."""

    key: tuple[str, ...]
    columns: tuple[str, ...]
    left_out: dict[str, Side] = field(default_factory=dict)
    versions: bool = False


def plan(src: TableSpec, dst: TableSpec, columns: Iterable[str] | None = None, versions: bool = False) -> Comparison:
    """The :class:`Comparison` of two specs: the same key columns in order and, for every
    column both have, types of one :func:`type_class` (else
    :class:`IncompatibleSchemaError` naming the difference). ``columns`` limits the
    compared columns (key columns are always compared): each must be on both sides."""
    if src.primary_key != dst.primary_key:
        raise IncompatibleSchemaError(
            f"the key columns differ: ({', '.join(src.primary_key)}) in the source, "
            f"({', '.join(dst.primary_key)}) in the destination"
        )
    for name in src.columns:
        if dst.has_column(name) and type_class(src.type_of(name)) != type_class(dst.type_of(name)):
            raise IncompatibleSchemaError(
                f"column {name!r} is {src.type_of(name)} in the source and {dst.type_of(name)} in the destination"
            )
    left_out: dict[str, Side] = {c: "src" for c in src.columns if not dst.has_column(c)}
    left_out.update({c: "dst" for c in dst.columns if not src.has_column(c)})
    if columns is None:
        chosen = tuple(c for c in src.columns if not src.is_key(c) and c not in left_out)
    else:
        if isinstance(columns, str):
            raise InvalidFieldError("columns must be a list of column names, not a string")
        wanted = dict.fromkeys(columns)
        for name in wanted:
            if name in left_out:
                raise InvalidFieldError(f"column {name!r} is only in the {SIDES[left_out[name]]} table", column=name)
            src.type_of(name)  # an unknown column raises, naming it
        chosen = tuple(c for c in wanted if not src.is_key(c))
        left_out = {}
    return Comparison(src.primary_key, chosen, left_out, bool(versions))


def _spec(provider: Provider, name: str, side: Side, missing_ok: bool) -> TableSpec | None:
    """The spec of table ``name`` on one side; a missing table raises (naming the side
    and the store) unless ``missing_ok`` (then None)."""
    try:
        return provider.admin.get_spec(name)
    except TableNotFoundError:
        if missing_ok:
            return None
        raise TableNotFoundError(f"table {name!r} does not exist in the {SIDES[side]} ({provider.url})") from None


def _filter(where: Expr | str | None, spec: TableSpec | None) -> Expr | None:
    """``where`` for one side: a ``--where`` text parsed against its spec (checking its
    columns and literals there), an expression as it is."""
    if isinstance(where, str) and spec is not None:
        return parse_where(where, spec)
    return None if isinstance(where, str) else where


Key = tuple[Any, ...] | None
"""A range bound: a full key, or None for unbounded."""


def _span(after: Key, upto: Key) -> Range | None:
    """The keys in (after, upto] (None: unbounded on that side; both None: everything)."""
    if after is None and upto is None:
        return None
    return Range(after, upto, start_inclusive=False, end_inclusive=True)


def _combined(checksums: Iterable[Checksum]) -> Checksum:
    """The checksum of the union of disjoint row sets."""
    rows = total = 0
    for checksum in checksums:
        rows += checksum.rows
        total += checksum.total
    return Checksum(rows, total & MASK)


class TableDiff(Iterator[Difference]):
    """The differences between a table of the source and one of the destination, in
    key order, found as the iterator is consumed (see the module docstring).

    :attr:`stats` holds the counts so far (final once exhausted), :attr:`comparison`
    what is compared, :attr:`missing` the side that lacks the table when ``missing_ok``
    let that through (every row of the other side is then a difference).
    """

    def __init__(
        self,
        src: Provider,
        dst: Provider,
        table: str,
        other: str | None = None,
        *,
        columns: Iterable[str] | None = None,
        versions: bool = False,
        where: Expr | str | None = None,
        missing_ok: bool = False,
        range_rows: int = RANGE_ROWS,
        narrow_rows: int = NARROW_ROWS,
    ) -> None:
        other = table if other is None else other
        self.name = table
        self.stats = DiffStats()
        self._segment_rows, self._narrow_rows = max(1, range_rows // FAN_OUT), narrow_rows
        src_spec = _spec(src, table, "src", missing_ok)
        dst_spec = _spec(dst, other, "dst", missing_ok)
        spec = src_spec or dst_spec
        if spec is None:
            raise TableNotFoundError(f"table {table!r} does not exist in the source or the destination")
        self.spec = spec
        """The source table's spec (the destination's when the source lacks the table)."""
        self.missing: Side | None = "src" if src_spec is None else "dst" if dst_spec is None else None
        self.comparison = plan(src_spec or spec, dst_spec or spec, columns, versions)
        self._src, self._dst = src.table(table), dst.table(other)
        self._where = {"src": _filter(where, src_spec), "dst": _filter(where, dst_spec)}
        self._key = self.comparison.key
        self._shown = (*self._key, *self.comparison.columns)
        self._steps = self._differences()

    def __next__(self) -> Difference:
        return next(self._steps)

    def _hashing(self, side: Side) -> dict[str, Any]:
        return {"where": self._where[side], "columns": self.comparison.columns, "versions": self.comparison.versions}

    def _differences(self) -> Iterator[Difference]:
        if self.missing is not None:
            side: Side = "dst" if self.missing == "src" else "src"
            yield from self._one_side(side)
            return
        pending: deque[tuple[Key, Key, list[Segment], Checksum, Future[Checksum]]] = deque()
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="kvctl-diff") as self._pool:
            for after, upto, segments in self._chunks():
                mine = _combined(s.checksum for s in segments)
                self.stats.compared += mine.rows
                pending.append((after, upto, segments, mine, self._theirs(_span(after, upto))))
                while len(pending) > AHEAD:
                    yield from self._settle(*pending.popleft())
            while pending:
                yield from self._settle(*pending.popleft())

    def _theirs(self, rng: Range | None) -> Future[Checksum]:
        """The destination's checksum of ``rng``, computed on a worker thread."""
        self.stats.checksums += 1
        return self._pool.submit(self._dst.checksum, rng, **self._hashing("dst"))

    def _chunks(self) -> Iterator[tuple[Key, Key, list[Segment]]]:
        """The source's segments, :data:`FAN_OUT` at a time, each chunk with its key range
        (after, upto]; the last chunk's range is unbounded above (it may be empty)."""
        after: Key = None
        while True:
            segments = self._src.segments(
                _span(after, None), size=self._segment_rows, limit=FAN_OUT, **self._hashing("src")
            )
            if len(segments) < FAN_OUT:
                yield after, None, segments
                return
            yield after, segments[-1].last, segments
            after = segments[-1].last

    def _settle(
        self, after: Key, upto: Key, segments: list[Segment], mine: Checksum, job: Future[Checksum]
    ) -> Iterator[Difference]:
        """The differences in a chunk's range, once the destination's checksum is in."""
        if job.result() != mine:
            yield from self._split(after, upto, segments)

    def _split(self, after: Key, upto: Key, segments: list[Segment]) -> Iterator[Difference]:
        """The differences in (after, upto], known to differ, which the source's
        ``segments`` cover: each segment compared, or the one segment cut finer, or
        its rows merged."""
        if len(segments) > 1:
            yield from self._each(after, upto, segments)
            return
        rows = segments[0].checksum.rows if segments else 0
        finer = [] if rows <= self._narrow_rows else self._finer(_span(after, upto), rows)
        if len(finer) > 1:
            yield from self._each(after, upto, finer)
        else:
            yield from self._rows(_span(after, upto))

    def _each(self, after: Key, upto: Key, segments: list[Segment]) -> Iterator[Difference]:
        """The differences in (after, upto], segment by segment (each its own range)."""
        bounds = [after, *(s.last for s in segments[:-1]), upto]
        theirs = [self._theirs(_span(bounds[i], bounds[i + 1])) for i in range(len(segments))]  # all at once
        for i, segment in enumerate(segments):
            if theirs[i].result() != segment.checksum:
                yield from self._split(bounds[i], bounds[i + 1], [segment])

    def _finer(self, rng: Range | None, count: int) -> list[Segment]:
        return self._src.segments(rng, size=math.ceil(count / FAN_OUT), **self._hashing("src"))

    def _scan(self, side: Side, rng: Range | None) -> Iterator[Row]:
        table = self._src if side == "src" else self._dst
        for row in table.scan(rng, where=self._where[side], columns=self.comparison.columns):
            self.stats.rows_read += 1
            yield row

    def _shown_row(self, row: Row) -> dict[str, Any]:
        shown = {c: row[c] for c in self._shown}
        if self.comparison.versions:
            shown[VERSION] = row.version
        return shown

    def _only(self, row: Row, side: Side) -> Difference:
        if side == "src":
            self.stats.only_src += 1
        else:
            self.stats.only_dst += 1
        return Difference(self.name, {k: row[k] for k in self._key}, side)

    def _one_side(self, side: Side) -> Iterator[Difference]:
        """Every row of the side that has the table, as ``only`` that side."""
        for row in self._scan(side, None):
            if side == "src":
                self.stats.compared += 1
            yield self._only(row, side)

    def _rows(self, rng: Range | None) -> Iterator[Difference]:
        """The differences in ``rng``, from both sides' rows merged by key."""
        order = self._order
        mine, theirs = self._scan("src", rng), self._scan("dst", rng)
        a, b = next(mine, None), next(theirs, None)
        while a is not None or b is not None:
            if b is None or (a is not None and order(a) < order(b)):
                yield self._only(a, "src")  # type: ignore[arg-type]
                a = next(mine, None)
            elif a is None or order(b) < order(a):
                yield self._only(b, "dst")
                b = next(theirs, None)
            else:
                changed = self._changed(a, b)
                if changed:
                    self.stats.changed += 1
                    key = {k: a[k] for k in self._key}
                    yield Difference(self.name, key, None, changed, self._shown_row(a), self._shown_row(b))
                a, b = next(mine, None), next(theirs, None)

    def _order(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple([sort_key(row[k]) for k in self._key])

    def _changed(self, a: Row, b: Row) -> tuple[str, ...]:
        changed = [c for c in self.comparison.columns if not values_equal(a[c], b[c])]
        if self.comparison.versions and a.version != b.version:
            changed.append(VERSION)
        return tuple(changed)


def compare(
    src: Provider,
    dst: Provider,
    table: str,
    other: str | None = None,
    *,
    columns: Iterable[str] | None = None,
    versions: bool = False,
    where: Expr | str | None = None,
    missing_ok: bool = False,
) -> TableDiff:
    """The differences between ``src``'s table ``table`` and ``dst``'s table ``other``
    (default: the same name; ``dst`` may be ``src``), in key order: a
    :class:`TableDiff` (an iterator of :class:`Difference` with :attr:`~TableDiff.stats`).

    ``columns`` limits the compared columns, ``versions`` compares row versions too,
    ``where`` restricts both sides (a row outside it on one side is only on the other;
    a text is parsed against each side's spec, as ``--where``).
    Raises at once :class:`TableNotFoundError` naming the side that lacks a table (with
    ``missing_ok`` only when both do: the other side's rows are then every difference),
    :class:`IncompatibleSchemaError` for specs that cannot be compared (:func:`plan`).
    """
    return TableDiff(src, dst, table, other, columns=columns, versions=versions, where=where, missing_ok=missing_ok)


__all__ = ["Comparison", "DiffStats", "Difference", "TableDiff", "compare", "plan", "type_class"]
