"""Load batches as COPY rows: :class:`PgLoadPreparer` and :class:`LoadBatch`.

The preparer validates each input row as it is read, in one generated loop per spec
that runs the spec's own value checks (:func:`spi.validate.value_checks`, the code of
the generated whole-row validator) and appends a complete row as the very tuple
COPY sends: its values in column order, then version 1. No dict per row is built and
then taken apart again. Any other row (a partial upsert row, a mapping that is not a
dict, an unknown column) goes through :func:`spi.validate.validate_row`, so results
and errors are exactly those of the default preparer. Rows validated already
(:class:`spi.validated.ValidatedRows`) become COPY tuples as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice, repeat
from operator import itemgetter
from typing import Any, cast

from spi.errors import KvError
from spi.keys import key_of
from spi.load import LoadPreparer
from spi.spec import TableSpec
from spi.validate import validate_row, value_checks
from spi.validated import ArrowRows, ColumnFeed

Taken = tuple[Any, ...] | dict[str, Any]
"""A validated row: a COPY tuple ``(*values in column order, 1)`` when complete, else
the dict of its given columns."""


class LoadBatch:
    """A validated batch for one spec, rows in input order (see :data:`Taken`), given
    as the rows or as an Arrow record batch of every column (:attr:`arrow`, which
    :mod:`providers.postgres.copy_arrow` sends as it is; :attr:`rows` are made of it
    only when asked for)."""

    __slots__ = ("_key", "_rows", "arrow", "complete", "spec")

    def __init__(self, spec: TableSpec, rows: list[Taken] | None = None, *, arrow: Any = None) -> None:
        self.spec = spec
        self._rows = rows
        self.arrow = arrow
        """The rows as an Arrow record batch of every column, or None."""
        self.complete = rows is None or dict not in set(map(type, rows))
        """True when every row is a COPY tuple (every column given)."""
        self._key = key_getter(spec)

    @property
    def rows(self) -> list[Taken]:
        """The rows (made of :attr:`arrow` when the batch came as that)."""
        if self._rows is None:
            self._rows = list(zip(*ArrowRows(self.arrow).columns, repeat(1)))
        return self._rows

    def __len__(self) -> int:
        return int(self.arrow.num_rows) if self._rows is None else len(self._rows)

    def keys(self) -> list[Any]:
        """Every row's key: a value for a one-column key, else a tuple (as :meth:`key_tuple`
        takes them)."""
        rows, get, spec = self.rows, self._key, self.spec
        if self.complete:
            return list(map(get, cast(list[tuple[Any, ...]], rows)))
        one = len(spec.primary_key) == 1
        return [get(r) if isinstance(r, tuple) else key_of(spec, r)[0] if one else key_of(spec, r) for r in rows]

    def key_tuple(self, key: Any) -> tuple[Any, ...]:
        """A key of :meth:`keys` as a key tuple."""
        return (key,) if len(self.spec.primary_key) == 1 else key

    def dicts(self) -> list[dict[str, Any]]:
        """Every row as a validated dict (for the per-row path)."""
        columns = self.spec.columns
        return [dict(zip(columns, r)) if isinstance(r, tuple) else r for r in self.rows]

    def groups(self, mode: str) -> Iterator[tuple[tuple[str, ...], list[int], list[tuple[Any, ...]]]]:
        """The rows as COPY tuples by the columns they set: ``(columns, positions,
        tuples)``. An upsert merges only the given columns, so partial rows are grouped
        by theirs; insert and replace set every column (null where not given)."""
        rows, every = self.rows, self.spec.columns
        if self.complete:
            yield every, list(range(len(rows))), rows  # type: ignore[misc]  # all tuples
            return
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, r in enumerate(rows):
            given = every if type(r) is tuple or mode != "upsert" else tuple(c for c in every if c in r)
            groups.setdefault(given, []).append(i)
        for columns, positions in groups.items():
            tuples = [_as_tuple(rows[i], columns) for i in positions]
            yield columns, positions, tuples


def key_getter(spec: TableSpec) -> Callable[[tuple[Any, ...]], Any]:
    """The key of a COPY tuple: its value for a one-column key, else a tuple."""
    return itemgetter(*(spec.columns.index(k) for k in spec.primary_key))


def _as_tuple(row: Taken, columns: tuple[str, ...]) -> tuple[Any, ...]:
    """A row's COPY tuple for ``columns`` (a complete row's is its own)."""
    if type(row) is tuple:
        return row
    assert isinstance(row, dict)
    return (*map(row.get, columns), 1)


class PgLoadPreparer(LoadPreparer):
    """Validates rows as they are read into COPY tuples (see the module doc)."""

    def __init__(self, spec: TableSpec) -> None:
        super().__init__(spec)
        self._take = _taker(spec)
        self._key = key_getter(spec)
        self._one = len(spec.primary_key) == 1

    def take(self, rows: Iterator[Any], n: int, *, held: bool) -> list[Any]:
        """Up to ``n`` rows, each validated (so copied) as it is read."""
        taken: list[Taken] = []
        try:
            self._take(islice(rows, n), taken)
        except KvError as exc:
            exc.row_index = len(taken)
            raise
        return taken

    def take_validated(self, feed: ColumnFeed, n: int) -> Sequence[Any]:
        """Up to ``n`` rows of a :class:`spi.validated.ValidatedRows` as COPY tuples (every
        column, then version 1), without validating them again; Arrow's as they are
        (:class:`spi.validated.ArrowRows`)."""
        if feed.arrow:
            batch = feed.take_arrow(n)
            return [] if batch is None else ArrowRows(batch)
        return list(zip(*feed.take(n), repeat(1)))

    def prepare(self, taken: Sequence[Any]) -> LoadBatch:
        """The batch the writer takes."""
        if type(taken) is ArrowRows:
            return LoadBatch(self.spec, arrow=taken.batch)
        return LoadBatch(self.spec, taken if isinstance(taken, list) else list(taken))

    def key_of(self, row: Any) -> tuple[Any, ...]:
        """The key tuple of a taken row."""
        if type(row) is not tuple:
            return key_of(self.spec, row)
        key = self._key(row)
        return (key,) if self._one else key


def _taker(spec: TableSpec) -> Callable[[Iterator[Any], list[Taken]], None]:
    """A generated ``take(rows, out)``: appends each row of ``rows`` to ``out``
    validated, as a COPY tuple when it is a dict of every column (checked inline by
    :func:`value_checks`), else as :func:`validate_row` makes it (a tuple when
    complete). A bad row raises with ``out`` holding the rows before it."""
    n = len(spec.columns)
    columns = spec.columns

    def general(row: Any) -> Taken:
        values = validate_row(spec, row)
        return (*map(values.__getitem__, columns), 1) if len(values) == n else values

    namespace: dict[str, Any] = {"general": general}
    lines = [
        "def take(rows, out):",
        "    append = out.append",
        "    for row in rows:",
        f"        if type(row) is not dict or len(row) != {n}:",
        "            append(general(row))",
        "            continue",
        "        try:",
        *value_checks(spec, namespace, "            "),
        "        except KeyError:",
        "            append(general(row))",
        "            continue",
        "        append((" + "".join(f"v{i}, " for i in range(n)) + "1))",
    ]
    exec("\n".join(lines), namespace)
    take: Callable[[Iterator[Any], list[Taken]], None] = namespace["take"]
    return take
