"""One table inside one reference transaction: every public table operation.

Rows live in a plain list; finding a row is a linear search. Every operation checks
all its arguments before it writes anything, and each ``load`` batch is written to
a copy of the list that replaces it only when the whole batch succeeded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

from spi.aggregate import Group, aggregate_rows, check_aggregate
from spi.errors import InvalidFieldError, KvError, RowExistsError, RowNotFoundError, VersionMismatchError
from spi.filters import Expr
from spi.keys import Range
from spi.row import Page, Row
from spi.spec import TableSpec
from spi.testing.reference.checks import (
    check_changes,
    check_column,
    check_key,
    check_limit,
    check_load,
    check_row,
    check_value,
    check_version,
    full_row,
    key_values,
)
from spi.testing.reference.feed import Pending
from spi.testing.reference.order import compare_tuples, compare_values
from spi.testing.reference.records import Record, key_of
from spi.testing.reference.scans import check_scan, decode_token, encode_token, position, select
from spi.types import FieldType, validate_value

_INCREMENTABLE = (FieldType.INT, FieldType.LONG, FieldType.DOUBLE)


def load_batches(
    rows: Iterable[Mapping[str, Any]],
    mode: str,
    batch_size: int,
    write_batch: Callable[[list[Mapping[str, Any]], str, int], None],
) -> int:
    """Check the load arguments, then ``write_batch(chunk, mode, offset)`` for each
    ``batch_size`` rows of ``rows`` (``offset``: the chunk's first row); rows written."""
    check_load(mode, batch_size)
    source = iter(rows)
    written = 0
    while chunk := list(islice(source, batch_size)):
        write_batch(chunk, mode, written)
        written += len(chunk)
    return written


def kept_version(row: Any) -> int:
    """The version a load that keeps versions writes ``row`` with: its ``version``
    attribute, a positive 64-bit integer."""
    version = getattr(row, "version", None)
    if isinstance(version, bool) or not isinstance(version, int) or not 0 < version < 2**63:
        raise InvalidFieldError(f"a load that keeps versions needs rows with a version, not {version!r}")
    return version


class ReferenceTable:
    """A table as one transaction sees it; ``rows`` is the transaction's private copy
    and ``feed`` (a change-fed table only) the transaction's events, in call order."""

    def __init__(self, spec: TableSpec, rows: list[Record], feed: Pending | None = None) -> None:
        self.spec = spec
        self.rows = rows
        self.feed = feed

    def _record(
        self,
        op: str,
        key: tuple[Any, ...],
        values: dict[str, Any] | None,
        version: int | None,
        prev: Record | None = None,
    ) -> None:
        if self.feed is not None:
            row = None if values is None else dict(values)
            before = None if prev is None else dict(prev.values)
            self.feed.append((self.name, op, key, row, version, None if op != "put" else prev is None, before))

    @property
    def name(self) -> str:
        """The table's name."""
        return self.spec.name

    # ------------------------------------------------------------------ storage
    def _find(self, key: tuple[Any, ...]) -> Record | None:
        for record in self.rows:
            if compare_tuples(record.key(self.spec), key) == 0:
                return record
        return None

    def _store(self, values: dict[str, Any], old: Record | None) -> int:
        """Write a whole row over ``old`` (None: a new row); its new version."""
        version = 1 if old is None else old.version + 1
        record = Record(values, version)
        if old is None:
            self.rows.append(record)
        else:
            self.rows[self.rows.index(old)] = record
        self._record("put", key_of(self.spec, values), values, version, old)
        return version

    def _remove(self, old: Record) -> None:
        self.rows.remove(old)
        self._record("delete", old.key(self.spec), None, None, old)

    def _check_version(self, old: Record | None, version: int | None) -> None:
        if version is None:
            return
        if old is None:
            raise RowNotFoundError(f"no such row in {self.name!r} (expected version {version})")
        if old.version != version:
            raise VersionMismatchError(f"row is at version {old.version}, not {version}", current_version=old.version)

    # ------------------------------------------------------------------- writes
    def upsert(self, row: Mapping[str, Any]) -> int:
        """Insert, or merge the given columns into the existing row; the new version."""
        self.spec.check_writable()  # a frozen table refuses every row write
        values = check_row(self.spec, row)
        old = self._find(key_of(self.spec, values))
        return self._store(full_row(self.spec, values) if old is None else {**old.values, **values}, old)

    def insert(self, row: Mapping[str, Any]) -> int:
        """Insert a new row; :class:`RowExistsError` if the key exists."""
        self.spec.check_writable()
        values = check_row(self.spec, row)
        key = key_of(self.spec, values)
        if self._find(key) is not None:
            raise RowExistsError(f"a row with key {key!r} already exists", key=key)
        return self._store(full_row(self.spec, values), None)

    def replace(self, row: Mapping[str, Any], *, version: int | None = None) -> int:
        """Overwrite the whole row (unset columns become null), optionally conditionally."""
        self.spec.check_writable()
        values = check_row(self.spec, row)
        wanted = check_version(version)
        old = self._find(key_of(self.spec, values))
        self._check_version(old, wanted)
        return self._store(full_row(self.spec, values), old)

    def update(
        self,
        key: Any,
        changes: Mapping[str, Any],
        *,
        default: Mapping[str, Any] | None = None,
        version: int | None = None,
    ) -> int:
        """Partial update; a missing row is created from ``default`` (one write) or is
        a :class:`RowNotFoundError`. Returns the new version."""
        self.spec.check_writable()
        k = check_key(self.spec, key)
        values = check_changes(self.spec, changes)
        base = None if default is None else check_changes(self.spec, default, "default")
        wanted = check_version(version)
        old = self._find(k)
        self._check_version(old, wanted)
        if old is not None:
            return self._store({**old.values, **values}, old)
        if base is None:
            raise RowNotFoundError(f"no row with key {k!r} in {self.name!r}; pass default=... to create it")
        return self._store(full_row(self.spec, {**key_values(self.spec, k), **base, **values}), None)

    def delete(self, key: Any, *, version: int | None = None) -> bool:
        """Delete a row; True if one was deleted."""
        self.spec.check_writable()
        k = check_key(self.spec, key)
        wanted = check_version(version)
        old = self._find(k)
        self._check_version(old, wanted)
        if old is None:
            return False
        self._remove(old)
        return True

    def increment(self, key: Any, column: str, amount: int | float = 1) -> int | float:
        """Add ``amount`` to an int, long or double non-key column (missing row or
        null: 0); the new value."""
        self.spec.check_writable()
        k = check_key(self.spec, key)
        check_column(self.spec, column)
        ftype = self.spec.type_of(column)
        if self.spec.is_key(column) or ftype not in _INCREMENTABLE:
            raise InvalidFieldError(f"increment needs an int, long or double non-key column, not {column!r}")
        if isinstance(amount, bool) or not isinstance(amount, (int, float)):
            raise InvalidFieldError(f"increment amount must be a number, got {amount!r}", column=column)
        if ftype.is_integer and not isinstance(amount, int):
            raise InvalidFieldError(f"increment of {ftype} column {column!r} needs an integer amount")
        old = self._find(k)
        current = None if old is None else old.values[column]
        new_value = check_value(self.spec, column, (0 if current is None else current) + amount)
        if old is None:
            self._store(full_row(self.spec, {**key_values(self.spec, k), column: new_value}), None)
        else:
            self._store({**old.values, column: new_value}, old)
        return new_value

    def compare_and_swap(self, key: Any, column: str, expected: Any, new: Any) -> bool:
        """Set non-key ``column`` to ``new`` if it holds ``expected`` (None matches a
        missing row or a null); a missing row is created. True if it swapped."""
        self.spec.check_writable()
        k = check_key(self.spec, key)
        if self.spec.is_key(column):
            raise InvalidFieldError(f"compare_and_swap needs a non-key column, not {column!r}", column=column)
        changes = check_changes(self.spec, {column: new})
        want = None if expected is None else validate_value(self.spec.type_of(column), expected, column)
        old = self._find(k)
        current = None if old is None else old.values[column]
        if (want is None) != (current is None) or compare_values(current, want) != 0:
            return False
        if old is None:
            self._store(full_row(self.spec, {**key_values(self.spec, k), **changes}), None)
        else:
            self._store({**old.values, **changes}, old)
        return True

    def update_range(self, range: Range | None = None, *, where: Expr | None = None, changes: Mapping[str, Any]) -> int:
        """Apply ``changes`` to every row in range matching ``where``; rows changed."""
        self.spec.check_writable()
        values = check_changes(self.spec, changes)
        found = select(self.spec, self.rows, check_scan(self.spec, range, where))
        for old in found:
            self._store({**old.values, **values}, old)
        return len(found)

    def delete_range(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """Delete every row in range matching ``where``; rows deleted."""
        self.spec.check_writable()
        found = select(self.spec, self.rows, check_scan(self.spec, range, where))
        for old in found:
            self._remove(old)
        return len(found)

    def load(
        self,
        rows: Iterable[Mapping[str, Any]],
        *,
        mode: str = "upsert",
        batch_size: int = 10_000,
        keep_versions: bool = False,
    ) -> int:
        """Write ``rows`` batch by batch (see :meth:`load_batch`); rows written."""

        def write(chunk: list[Mapping[str, Any]], m: str, offset: int) -> None:
            self.load_batch(chunk, m, offset, keep_versions=keep_versions)

        return load_batches(rows, mode, batch_size, write)

    def load_batch(
        self, chunk: list[Mapping[str, Any]], mode: str, offset: int, *, keep_versions: bool = False
    ) -> None:
        """Write one batch atomically: all its rows, or (on an error) none of them.

        The error's ``row_index`` is the bad row's position in the whole load
        (``offset`` is the batch's); an invalid value anywhere in the batch is
        reported before a key repeated in it or already stored (``mode="insert"``).
        With ``keep_versions`` each row is written with its own version (a row without
        one is reported like a bad value, before its values are checked).
        """
        self.spec.check_writable()
        checked = []
        versions = []
        for i, row in enumerate(chunk):
            try:
                if keep_versions:
                    versions.append(kept_version(row))
                checked.append(check_row(self.spec, row))
            except KvError as exc:
                raise _in_load(exc, offset + i, offset) from None
        if mode == "insert":
            keys = [key_of(self.spec, values) for values in checked]
            for i, key in enumerate(keys):
                if any(compare_tuples(key, earlier) == 0 for earlier in keys[:i]):
                    duplicate = RowExistsError(f"key {key!r} appears twice in the input", key=key)
                    raise _in_load(duplicate, offset + i, offset)
        copy = ReferenceTable(self.spec, list(self.rows), None if self.feed is None else [])
        write = {"upsert": copy.upsert, "insert": copy.insert, "replace": copy.replace}[mode]
        for i, values in enumerate(checked):
            try:
                if keep_versions:
                    copy.write_kept(values, mode, versions[i])
                else:
                    write(values)
            except KvError as exc:
                raise _in_load(exc, offset + i, offset) from None
        self.rows[:] = copy.rows
        if self.feed is not None and copy.feed is not None:
            self.feed.extend(copy.feed)

    def write_kept(self, values: dict[str, Any], mode: str, version: int) -> None:
        """Write checked ``values`` as ``mode`` says, with ``version`` (not the next one)."""
        self.spec.check_writable()
        key = key_of(self.spec, values)
        old = self._find(key)
        if old is not None and mode == "insert":
            raise RowExistsError(f"a row with key {key!r} already exists", key=key)
        merged = {**old.values, **values} if old is not None and mode == "upsert" else full_row(self.spec, values)
        record = Record(merged, version)
        if old is None:
            self.rows.append(record)
        else:
            self.rows[self.rows.index(old)] = record
        self._record("put", key, merged, version, old)

    # -------------------------------------------------------------------- reads
    def _row(self, record: Record) -> Row:
        return Row({c: record.values[c] for c in self.spec.columns}, record.version)

    def read(self, key: Any) -> Row | None:
        """The row with this complete key, or None."""
        found = self._find(check_key(self.spec, key))
        return None if found is None else self._row(found)

    def scan(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
    ) -> Iterator[Row]:
        """Matching rows in order (key order by default), at most ``limit``."""
        n = check_limit(limit)
        found = select(self.spec, self.rows, check_scan(self.spec, range, where, order_by, descending))
        return iter([self._row(r) for r in found[:n]])

    def scan_page(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int,
        after: str | None = None,
    ) -> Page:
        """At most ``limit`` rows strictly after the token ``after``, and the token to
        resume after them (None when no row follows)."""
        n = check_limit(limit, required=True)
        assert n is not None
        scan = check_scan(self.spec, range, where, order_by, descending)
        start = None if after is None else decode_token(self.spec, scan, after)
        if n == 0:
            return Page([], encode_token(self.spec, scan, start))  # an empty page keeps the position
        found = select(self.spec, self.rows, scan, start)
        if len(found) <= n:
            return Page([self._row(r) for r in found], None)
        page = found[:n]
        return Page([self._row(r) for r in page], encode_token(self.spec, scan, position(self.spec, scan, page[-1])))

    def count(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """How many rows are in range and match ``where``."""
        return len(select(self.spec, self.rows, check_scan(self.spec, range, where)))

    def aggregate(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        group_by: Iterable[str] = (),
        columns: Iterable[str] = (),
    ) -> list[Group]:
        """Counts per group and column statistics of the matching rows (:mod:`spi.aggregate`)."""
        grouped, stats = check_aggregate(self.spec, group_by, columns)
        return aggregate_rows(self.spec, self.scan(range, where=where), grouped, stats)


def _in_load(exc: KvError, row_index: int, rows_written: int) -> KvError:
    """``exc`` marked as failing a load at input row ``row_index``."""
    exc.row_index = row_index
    exc.rows_written = rows_written
    return exc
