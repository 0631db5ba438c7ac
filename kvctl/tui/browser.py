"""The dashboard's data access for one table's rows (no UI code): keyset paging under a
filter and an order, jumping to a key, and version-checked writes.

Everything here is immutable or stateless: the rows screen owns the current
:class:`Query` and :class:`Position`, a worker calls :func:`read_page` and the screen
applies the :class:`PageView` it returns (so a stale result can simply be dropped).
Pages are read with ``scan_page`` and its ``next_token``: no page ever counts or
skips rows, so page 1,000 costs what page 1 costs, and the last page (End) is one
page of the reversed scan. Each call is a short auto-commit operation: the dashboard
holds nothing while idle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import spi
from kvctl.errors import CliError
from kvctl.words import parse_words
from spi import textvalues
from spi.filters import evaluate


@dataclass(frozen=True)
class Order:
    """The order rows are shown in: the key (``column`` None) or an indexed column."""

    column: str | None = None
    descending: bool = False

    @property
    def label(self) -> str:
        """``key``, ``status desc``..."""
        return (self.column or "key") + (" desc" if self.descending else "")


@dataclass(frozen=True)
class Query:
    """What the rows screen shows: a table, a filter (``--where`` text) and an order."""

    table: str
    where_text: str = ""
    order: Order = Order()

    def where(self, spec: spi.TableSpec) -> spi.Expr | None:
        """The parsed filter (None: every row); raises the parse error."""
        return spi.parse_where(self.where_text, spec) if self.where_text else None

    def scan_options(self, spec: spi.TableSpec) -> dict[str, Any]:
        """``where``, ``order_by`` and ``descending`` for ``scan``/``scan_page``."""
        return {"where": self.where(spec), "order_by": self.order.column, "descending": self.order.descending}


@dataclass(frozen=True)
class Position:
    """Where in the query's rows the shown page starts.

    ``anchor`` is a key the view starts at (after a jump; key order only), else the
    view starts at the first row. ``pages`` holds, for every page from there to the
    current one, its ``after`` token and how many rows precede it (None: unknown,
    after a jump).

    ``backward``: the view starts at the last row (End) and goes back from there
    (PgUp): the pages are read in the reversed order (their rows shown the right way
    round), and ``pages`` holds, for every page from the last one to the current one,
    its ``after`` token in that order and how many rows follow it.
    """

    anchor: tuple[Any, ...] | None = None
    pages: tuple[tuple[str | None, int | None], ...] = ((None, 0),)
    backward: bool = False

    @property
    def after(self) -> str | None:
        """The token the current page is read after."""
        return self.pages[-1][0]

    @property
    def offset(self) -> int | None:
        """Rows before the current page (after it, ``backward``), if known."""
        return self.pages[-1][1]


LAST_PAGE = Position(backward=True)
"""The position of the last page (End)."""


@dataclass(frozen=True)
class PageView:
    """One page as read: its rows, where it is, and the token of the page after it."""

    spec: spi.TableSpec
    query: Query
    position: Position
    rows: list[spi.Row]
    next_token: str | None

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column: the key columns first (in key order), then the others in
        declaration order."""
        return key_first(self.spec)

    @property
    def first_row(self) -> int | None:
        """The 1-based number of the first row shown, if known without the total."""
        offset = self.position.offset
        return None if offset is None or self.position.backward else offset + 1

    def first_row_of(self, total: int | None) -> int | None:
        """:attr:`first_row`, or on a page read from the end, the number ``total``
        (the count of the query's rows, if known) gives it."""
        offset = self.position.offset
        if not self.position.backward or offset is None or total is None:
            return self.first_row
        first = total - offset - len(self.rows) + 1
        return first if first >= 1 else None

    @property
    def at_start(self) -> bool:
        """True when no row comes before this page (a page read from the end that
        reaches the first row is read again as the first page: never one of them)."""
        return self.position.anchor is None and len(self.position.pages) == 1 and not self.position.backward

    @property
    def at_end(self) -> bool:
        """True when no row comes after this page."""
        return len(self.position.pages) == 1 if self.position.backward else self.next_token is None


@dataclass(frozen=True)
class Cursor:
    """Where the cursor goes on a page being shown: on a key, or at a line."""

    line: int = 0
    key: tuple[Any, ...] | None = None
    missing: str | None = None
    """A note for when the key (or the prefix) is not on the page."""
    prefix: tuple[Any, ...] | None = None
    """Go to key with the first key values only: the cursor goes to the first row; the
    note shows if that row does not start with them."""

    def target(self) -> tuple[Any, ...] | None:
        """The key or key prefix the cursor looks for."""
        return self.key if self.key is not None else self.prefix

    def found(self, spec: spi.TableSpec, rows: list[spi.Row]) -> bool:
        """True if what the cursor looks for is on ``rows`` (or it looks for nothing)."""
        if self.key is not None:
            return any(key_of(spec, row) == self.key for row in rows)
        if self.prefix is not None:
            return bool(rows) and at_prefix(spec, rows[0], self.prefix)
        return True


def exists(table: spi.Table, spec: spi.TableSpec, prefix: tuple[Any, ...]) -> bool:
    """True if a row's key is, or starts with, ``prefix`` (no filter)."""
    rng = spi.Range.prefix(dict(zip(spec.primary_key, prefix)))
    return bool(table.scan_page(rng, limit=1, columns=[]).rows)


def hidden_cursor(table: spi.Table, view: PageView, cursor: Cursor) -> Cursor:
    """Go to key under a filter: a key that exists but does not match the filter is
    said to be hidden by it (not missing); ``cursor`` as it is otherwise."""
    target = cursor.target()
    if target is None or view.position.anchor != target:  # not a jump (a save, a refresh)
        return cursor
    if not cursor.missing or not view.query.where_text or cursor.found(view.spec, view.rows):
        return cursor
    if not exists(table, view.spec, target):
        return cursor
    words = key_words(view.spec, target)
    note = (
        f"{words} is hidden by the filter (/ and an empty filter shows every row); showing the matching rows after it"
    )
    return replace(cursor, missing=note)


def key_first(spec: spi.TableSpec) -> tuple[str, ...]:
    """The columns of ``spec`` as the dashboard shows them: key columns first."""
    return (*spec.primary_key, *(c for c in spec.columns if not spec.is_key(c)))


def read_page(table: spi.Table, spec: spi.TableSpec, query: Query, position: Position, size: int) -> PageView:
    """Read the page of ``size`` rows at ``position``. A page read from the end that
    comes short of a whole page reaches the first row: the first page is shown."""
    options = query.scan_options(spec)
    if position.backward:
        options["descending"] = not options["descending"]
        page = table.scan_page(limit=size, after=position.after, **options)
        if len(page.rows) < size or page.next_token is None:
            return read_page(table, spec, query, Position(), size)
        return PageView(spec, query, position, page.rows[::-1], page.next_token)
    rng = None if position.anchor is None else spi.Range(start=position.anchor)
    page = table.scan_page(rng, limit=size, after=position.after, **options)
    return PageView(spec, query, position, page.rows, page.next_token)


def previous_position(table: spi.Table, spec: spi.TableSpec, query: Query, position: Position, size: int) -> Position:
    """The position of the page before ``position`` (the first page stays where it is).
    Pages after the start or the anchor are remembered; the page before an anchor is
    read backwards (one short descending scan). For a page read from the end, see
    :func:`earlier_position`."""
    if len(position.pages) > 1:
        return replace(position, pages=position.pages[:-1])
    if position.anchor is None:
        return position
    before = table.scan_page(spi.Range(end=position.anchor), limit=size, where=query.where(spec), descending=True)
    if len(before.rows) < size or before.next_token is None:
        return Position()
    return Position(anchor=key_of(spec, before.rows[-1]), pages=((None, None),))


def next_position(view: PageView) -> Position | None:
    """The position of the page after ``view`` (None: it is the last page)."""
    if view.at_end:
        return None
    if view.position.backward:
        return replace(view.position, pages=view.position.pages[:-1])
    return _further(view)


def earlier_position(view: PageView) -> Position:
    """The position of the page before ``view``, a page read from the end (the next
    page of the reversed scan)."""
    return _further(view)


def _further(view: PageView) -> Position:
    """``view``'s position and one more page: the one its ``next_token`` starts."""
    offset = view.position.offset
    shown = None if offset is None else offset + len(view.rows)
    return replace(view.position, pages=(*view.position.pages, (view.next_token, shown)))


def jump_position(spec: spi.TableSpec, words: list[str]) -> tuple[Position, tuple[Any, ...]]:
    """The position that starts at the key, or key prefix (the leftmost key columns),
    given as ``col=value`` words, and the key or prefix values (raises
    :class:`kvctl.errors.CliError` or :class:`spi.KvError` for bad words)."""
    if not words:
        raise CliError(f"give the key, or its first columns: {' '.join(f'{c}=…' for c in spec.primary_key)}")
    given = parse_words(spec, words, "key")
    extra = [c for c in given if not spec.is_key(c)]
    if extra:
        raise CliError(f"{extra[0]!r} is not a key column of {spec.name!r} (key: {', '.join(spec.primary_key)})")
    values = []
    for column in spec.primary_key:
        if column not in given:
            break
        values.append(given[column])
    if len(values) < len(given):
        missing = spec.primary_key[len(values)]
        raise CliError(f"give the key from its first column: {missing}=… comes before the columns after it")
    prefix = tuple(values)
    return Position(anchor=prefix, pages=((None, None),)), prefix


def at_prefix(spec: spi.TableSpec, row: Mapping[str, Any], prefix: tuple[Any, ...]) -> bool:
    """True if ``row``'s key starts with ``prefix`` (a whole key, or its first values)."""
    return key_of(spec, row)[: len(prefix)] == prefix


def filter_example(spec: spi.TableSpec, row: Mapping[str, Any] | None = None) -> str:
    """A ``--where`` clause for this table, to show in its filter's placeholder: a
    string column equal to a value and a numeric column above one, the values taken
    from ``row`` (a row of the table, e.g. the first one shown) where it has them, else
    made up; columns other than the key, and columns with a value, first."""
    values = row or {}
    order = (*(c for c in spec.columns if not spec.is_key(c)), *spec.primary_key)
    strings = [c for c in order if spec.type_of(c) is spi.FieldType.STRING]
    numbers = [c for c in order if spec.type_of(c).is_numeric]

    def usable_text(value: Any) -> bool:
        return isinstance(value, str) and 0 < len(value) <= 16 and value.isprintable()

    def usable_number(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 1e15

    parts = []
    if strings:
        column = next((c for c in strings if usable_text(values.get(c))), strings[0])
        text = values[column] if usable_text(values.get(column)) else "text"
        parts.append(f"{column} = '{text.replace(chr(39), chr(39) * 2)}'")
    if numbers:
        column = next((c for c in numbers if usable_number(values.get(c))), numbers[0])
        parts.append(f"{column} > {values[column] if usable_number(values.get(column)) else 0}")
    if not parts:
        return f"{spec.columns[-1]} is not null"
    example = " and ".join(parts)
    try:
        spi.parse_where(example, spec)
    except spi.KvError:  # a value the syntax cannot take back as written: made-up values
        return filter_example(spec)
    return example


def plural(count: int, noun: str) -> str:
    """``1 row``, ``2 rows``, ``1,200 rows``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def key_of(spec: spi.TableSpec, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key values of a row, in key order."""
    return tuple(row[c] for c in spec.primary_key)


def key_words(spec: spi.TableSpec, key: tuple[Any, ...] | Mapping[str, Any]) -> str:
    """A key (values, or its first values, or a row) as ``col=value`` words, as messages show keys (and as
    go to key reads them back)."""
    return textvalues.key_words(spec, key if isinstance(key, tuple) else key_of(spec, key))


def insert_row(table: spi.Table, values: Mapping[str, Any]) -> int:
    """Insert a new row (:class:`spi.RowExistsError` if its key is taken); the version."""
    return table.insert(values)


def update_row(table: spi.Table, spec: spi.TableSpec, row: spi.Row, changes: Mapping[str, Any]) -> int:
    """Change a shown row only if it is still at the version shown
    (:class:`spi.VersionMismatchError` otherwise); the new version."""
    return table.update(key_of(spec, row), changes, version=row.version)


def delete_row(table: spi.Table, spec: spi.TableSpec, row: spi.Row) -> bool:
    """Delete a shown row only if it is still at the version shown."""
    return table.delete(key_of(spec, row), version=row.version)


def count_change(
    spec: spi.TableSpec, where_text: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> int:
    """How a write from ``old`` to ``new`` (None: no row) changes the count under a filter."""
    where = spi.parse_where(where_text, spec) if where_text else None
    return counted(where, new) - counted(where, old)


def counted(where: spi.Expr | None, row: Mapping[str, Any] | None) -> int:
    """1 if ``row`` exists and matches ``where`` (None: every row), else 0."""
    if row is None:
        return 0
    return 1 if where is None or evaluate(where, row) is True else 0


__all__ = [
    "LAST_PAGE",
    "Cursor",
    "Order",
    "PageView",
    "Position",
    "Query",
    "at_prefix",
    "count_change",
    "counted",
    "delete_row",
    "earlier_position",
    "exists",
    "filter_example",
    "hidden_cursor",
    "insert_row",
    "jump_position",
    "key_first",
    "key_of",
    "key_words",
    "next_position",
    "plural",
    "previous_position",
    "read_page",
    "update_row",
]
