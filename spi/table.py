"""The table API inside a transaction, built once on a few provider primitives.

A provider subclasses :class:`TableBase` and implements the primitives (``_get``, ``_put``,
``_remove``, ``_scan``, ``_split`` and ``_explain``; ``_count``, ``_get_many``, ``_scan_rows``,
``_scan_batches``, ``_scan_arrow``, ``_load_preparer``, ``_load_batch``, ``_load_kept``,
``_aggregate``, ``_checksum`` and ``_segments`` (:mod:`spi.aggregate`, :mod:`spi.checksum`)
have generic defaults built on them). Every public operation — validation, versions,
conditions, defaults, increments, compare-and-swap, range writes, bulk load batching,
pagination tokens, multi-range merges — is implemented here.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spi.aggregate import Aggregates
from spi.checksum import Checksums
from spi.clock import SYSTEM_CLOCK, is_live, now_micros
from spi.errors import InvalidFieldError, RowExistsError, RowNotFoundError, VersionMismatchError
from spi.filters import Expr, bind
from spi.kept import load_kept
from spi.keys import KeyLike, Range, ResolvedRange, key_of, normalize_key, resolve_range
from spi.load import LoadPlan, LoadPreparer, run_load
from spi.planner import check_order_by
from spi.primitives import ColumnBatch, Kept, ScanRequest, Stored, sort_position
from spi.row import Page, Row
from spi.scanning import merge_scans, project, read_page, transpose
from spi.spec import TableSpec, check_ttl
from spi.textvalues import key_words
from spi.types import validate_value
from spi.validate import (
    check_batch_size,
    check_increment,
    check_limit,
    check_projection,
    checked_version,
    full_row,
    validate_changes,
    validate_row,
)
from spi.writerules import created, incremented, merged, next_version, swaps

if TYPE_CHECKING:
    import pyarrow as pa


class TableBase(Aggregates, Checksums, ABC):
    """One table inside one transaction: the public SPI operations."""

    def __init__(self, spec: TableSpec) -> None:
        self.spec = spec.fenced(self) if spec.frozen else spec  # a frozen table's writes raise (spi.frozen)

    @property
    def name(self) -> str:
        """The table's name."""
        return self.spec.name

    # ------------------------------------------------------------------ primitives
    @abstractmethod
    def _get(self, key: tuple[Any, ...]) -> Stored | None:
        """The stored row with this (validated) key, or None (an expired row too:
        the callers here decide, see :meth:`_current`)."""

    @abstractmethod
    def _put(
        self, key: tuple[Any, ...], values: dict[str, Any], version: int, old: Stored | None, expires: int | None
    ) -> None:
        """Write a full row (every column) with ``version`` and expiry ``expires``
        (microseconds since the epoch, None: never); ``old`` is what was there."""

    @abstractmethod
    def _remove(self, key: tuple[Any, ...], old: Stored, *, expired: bool = False) -> None:
        """Delete the row ``old`` stored under ``key`` (``expired``: a sweep removes it
        because it has expired, which a change feed records as ``"expire"``)."""

    def _clock(self) -> int:
        """Now, in microseconds since the epoch, on the provider's clock (which decides
        when rows expire): here the wall clock; a provider whose clock can be set
        (:mod:`spi.clock`) answers with that one."""
        return now_micros(SYSTEM_CLOCK)

    @abstractmethod
    def _scan(self, request: ScanRequest) -> Iterator[Stored]:
        """Stream the rows a :class:`ScanRequest` asks for, in bounded memory, never an
        expired one (as every scan and count primitive)."""

    @abstractmethod
    def _split(self, n: int) -> list[Range]:
        """About ``n`` disjoint key ranges covering the table, in key order."""

    @abstractmethod
    def _explain(self, key_range: ResolvedRange, where: Expr | None, order_by: str | None) -> str:
        """How the provider runs such a scan."""

    def _count(self, key_range: ResolvedRange, where: Expr | None) -> int:
        """Rows in range matching ``where``; providers may count without reading rows."""
        return sum(1 for _ in self._scan(ScanRequest(key_range, where)))

    def _get_many(self, keys: list[tuple[Any, ...]]) -> list[Stored | None]:
        """The stored rows with these (validated, distinct) keys, in order; providers
        may fetch them in one round trip."""
        return [self._get(k) for k in keys]

    def _scan_rows(self, request: ScanRequest) -> Iterator[Row]:
        """What ``_scan`` yields, as rows of every column; providers may build the
        rows directly."""
        return itertools.starmap(Row, self._scan(request))

    def _scan_list(self, request: ScanRequest) -> list[Row]:
        """What ``_scan_rows`` yields, in one list read now (pages); providers may
        build it in one call."""
        return list(self._scan_rows(request))

    def _scan_batches(self, request: ScanRequest, columns: tuple[str, ...], batch_size: int) -> Iterator[ColumnBatch]:
        """What ``_scan_rows`` yields, as ``columns`` in batches of at most ``batch_size``
        rows (never an empty batch); providers may read columns without building rows."""
        rows = self._scan_rows(request)
        while True:
            chunk = list(itertools.islice(rows, batch_size))
            if not chunk:
                return
            yield transpose(chunk, columns)
            if len(chunk) < batch_size:
                return

    def _scan_arrow(self, request: ScanRequest, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        """What ``_scan_batches`` yields, as Arrow record batches typed by the spec (never
        an empty batch, each of at most ``batch_size`` rows); providers may produce Arrow
        without making Python objects per value."""
        from spi.arrow import arrow_schema, columns_to_batch  # lazy: only Arrow scans need it, not get/put/scan

        schema = arrow_schema(self.spec, columns)
        for batch in self._scan_batches(request, columns, batch_size):
            yield columns_to_batch(batch, schema)

    def _load_batch(self, rows: Any, mode: str, expires: int | None) -> None:
        """Write a batch of validated rows (what ``_load_preparer`` prepares; here a list
        of validated dicts), each with expiry ``expires``; providers may override with a
        bulk path.

        Must behave exactly like one ``upsert``/``insert``/``replace`` per row in order.
        The existing rows are fetched with one ``_get_many``; a batch that repeats a key
        reads each row just before writing it, so later rows see earlier ones.
        """
        write = {"upsert": self._upsert_at, "insert": self._insert_at, "replace": self._replace_at}[mode]
        keys = [key_of(self.spec, values) for values in rows]
        olds: Iterable[Stored | None]
        if len(set(keys)) == len(keys):
            olds = self._current_many(keys)
            # An insert batch fails whole, before any write, on the first key that exists.
            existing = next((k for k, o in zip(keys, olds) if o is not None), None) if mode == "insert" else None
            if existing is not None:
                raise self._exists_error(existing)
        else:
            olds = map(self._current, keys)  # lazy: each read follows the writes before it
        for key, values, old in zip(keys, rows, olds):
            write(key, values, old, expires)

    def _load_kept(self, rows: Any, mode: str, kept: Kept) -> None:
        """:meth:`_load_batch` for a load that keeps versions: row ``i`` is written with
        version ``kept.versions[i]``. Takes what ``_load_preparer`` prepares, so a
        provider overriding one overrides both (here: validated dicts, see
        :func:`spi.kept.load_kept`)."""
        load_kept(self, rows, mode, kept)

    # ---------------------------------------------------------------- helpers
    def _key(self, key: KeyLike) -> tuple[Any, ...]:
        return normalize_key(self.spec, key)

    def _check_version(self, key: tuple[Any, ...], old: Stored | None, version: int | None) -> None:
        if checked_version(version) is None:
            return
        if old is None:
            raise RowNotFoundError(
                f"no row with key {key_words(self.spec, key)} in {self.name!r} (expected version {version})"
            )
        if old.version != version:
            raise VersionMismatchError(
                f"row {key_words(self.spec, key)} in {self.name!r} is at version {old.version}, not {version}",
                current_version=old.version,
            )

    def _row(self, stored: Stored, columns: tuple[str, ...] | None) -> Row:
        if columns is None:
            # Stored values are freshly decoded for each read: the row may own them.
            return Row(stored.values, stored.version, stored.expires)
        return Row({c: stored.values[c] for c in columns}, stored.version, stored.expires)

    def _live(self, stored: Stored | None, now: int | None = None) -> Stored | None:
        """``stored`` unless it has expired."""
        if stored is None or stored.expires is None:  # no clock read for a row that never expires
            return stored
        return stored if is_live(stored.expires, self._clock() if now is None else now) else None

    def _current(self, key: tuple[Any, ...]) -> Stored | None:
        """What a write to ``key`` meets: the stored row, or None when there is none or
        it has expired (then it is swept first, as its expiry says)."""
        old = self._get(key)
        if old is not None and old.expires is not None and self._live(old) is None:
            self._remove(key, old, expired=True)
            return None
        return old

    def _current_many(self, keys: list[tuple[Any, ...]]) -> list[Stored | None]:
        """:meth:`_current` of distinct ``keys``, fetched together."""
        olds = self._get_many(keys)
        now = None
        for i, old in enumerate(olds):
            if old is not None and old.expires is not None:
                now = self._clock() if now is None else now
                if not is_live(old.expires, now):
                    self._remove(keys[i], old, expired=True)
                    olds[i] = None
        return olds

    def _lifetime(self, ttl: int | float | None) -> int | None:
        """How long a row written with ``ttl`` lives, in microseconds (None: the table's
        ``ttl``; None for neither: forever)."""
        ttl = self.spec.ttl if ttl is None else check_ttl(ttl, InvalidFieldError)
        return None if ttl is None else int(ttl * 1_000_000)

    def _expiry(self, ttl: int | float | None) -> int | None:
        """The expiry of a row written now with ``ttl`` (None: the table's)."""
        return None if (lifetime := self._lifetime(ttl)) is None else self._clock() + lifetime

    def _load_expiry(self, ttl: int | float | None, keep_versions: bool) -> int | None:
        """The expiry of the rows a load writes (None with ``keep_versions``: each row
        carries its own, so a ``ttl`` with it is a mistake)."""
        if not keep_versions:
            return self._expiry(ttl)
        if ttl is not None:
            raise InvalidFieldError("a load that keeps versions keeps each row's expiry too: drop ttl")
        return None

    def _write(self, key: tuple[Any, ...], values: dict[str, Any], old: Stored | None, expires: int | None) -> int:
        version = next_version(None if old is None else old.version)
        self._put(key, values, version, old, expires)
        return version

    # Writes of validated ``values`` with key ``key`` over ``old``, what is stored there
    # (a live row), with expiry ``expires``.
    def _upsert_at(self, key: tuple[Any, ...], values: dict[str, Any], old: Stored | None, expires: int | None) -> int:
        return self._write(key, merged(None if old is None else old.values, self.spec, values), old, expires)

    def _insert_at(self, key: tuple[Any, ...], values: dict[str, Any], old: Stored | None, expires: int | None) -> int:
        if old is not None:
            raise self._exists_error(key)
        return self._write(key, full_row(self.spec, values), None, expires)

    def _exists_error(self, key: tuple[Any, ...]) -> RowExistsError:
        return RowExistsError(f"a row with key {key_words(self.spec, key)} already exists in {self.name!r}", key=key)

    def _replace_at(
        self,
        key: tuple[Any, ...],
        values: dict[str, Any],
        old: Stored | None,
        expires: int | None,
        version: int | None = None,
    ) -> int:
        self._check_version(key, old, version)
        return self._write(key, full_row(self.spec, values), old, expires)

    # ------------------------------------------------------------------ writes
    # Every write gives the rows it writes the expiry its ``ttl`` says (the table's
    # ``ttl`` when not given; None for neither: the row never expires).
    def upsert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """Insert, or merge the given columns into the existing row; the new version."""
        values = validate_row(self.spec, row)
        key = key_of(self.spec, values)
        expires = self._expiry(ttl)
        return self._upsert_at(key, values, self._current(key), expires)

    def insert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """Insert a new row; :class:`RowExistsError` if the key exists."""
        values = validate_row(self.spec, row)
        key = key_of(self.spec, values)
        expires = self._expiry(ttl)
        return self._insert_at(key, values, self._current(key), expires)

    def replace(self, row: Mapping[str, Any], *, version: int | None = None, ttl: int | float | None = None) -> int:
        """Overwrite the whole row (unset columns become null), optionally conditionally."""
        values = validate_row(self.spec, row)
        key = key_of(self.spec, values)
        expires = self._expiry(ttl)
        return self._replace_at(key, values, self._current(key), expires, version)

    def update(
        self,
        key: KeyLike,
        changes: Mapping[str, Any],
        *,
        default: Mapping[str, Any] | None = None,
        version: int | None = None,
        ttl: int | float | None = None,
    ) -> int:
        """Partial update of an existing row; with ``default``, a missing row is
        created from it first. Returns the new version."""
        k = self._key(key)
        values = validate_changes(self.spec, changes)
        base = None if default is None else validate_changes(self.spec, default, what="default")
        expires = self._expiry(ttl)
        old = self._current(k)
        self._check_version(k, old, version)
        if old is None:
            if base is None:
                raise RowNotFoundError(f"no row with key {key_words(self.spec, k)} in {self.name!r} to update")
            return self._write(k, created(self.spec, k, {**base, **values}), old, expires)
        return self._write(k, merged(old.values, self.spec, values), old, expires)

    def delete(self, key: KeyLike, *, version: int | None = None) -> bool:
        """Delete a row; True if one was deleted."""
        k = self._key(key)
        old = self._current(k)
        self._check_version(k, old, version)
        if old is None:
            return False
        self._remove(k, old)
        return True

    def increment(self, key: KeyLike, column: str, amount: int | float = 1) -> int | float:
        """Add ``amount`` to a numeric non-key column (a missing row or null counts
        as 0); returns the new value."""
        k = self._key(key)
        ftype, amount = check_increment(self.spec, column, amount)
        old = self._current(k)
        current = None if old is None else old.values[column]
        new_value = incremented(self.spec, column, ftype, current, amount)
        row = (
            created(self.spec, k, {column: new_value})
            if old is None
            else merged(old.values, self.spec, {column: new_value})
        )
        self._write(k, row, old, self._expiry(None))
        return new_value  # type: ignore[no-any-return]

    def compare_and_swap(self, key: KeyLike, column: str, expected: Any, new: Any) -> bool:
        """Set ``column`` to ``new`` if it holds ``expected`` (None: missing row or
        null); creates a missing row on a match. True if it swapped."""
        k = self._key(key)
        if self.spec.is_key(column):
            raise InvalidFieldError(
                f"compare_and_swap needs a non-key column; {column!r} is a key column", column=column
            )
        checked = validate_changes(self.spec, {column: new})
        ftype = self.spec.type_of(column)
        want = None if expected is None else validate_value(ftype, expected, column)
        old = self._current(k)
        current = None if old is None else old.values[column]
        if not swaps(current, want):
            return False
        row = created(self.spec, k, checked) if old is None else merged(old.values, self.spec, checked)
        self._write(k, row, old, self._expiry(None))
        return True

    def _matching_chunks(self, rng: Range | None, where: Expr | None, chunk: int = 1000) -> Iterator[list[Stored]]:
        """Rows to change, a chunk at a time, resuming by key so writes between chunks are safe."""
        request = ScanRequest(resolve_range(self.spec, rng), None if where is None else bind(where, self.spec))
        after: bytes | None = None
        while True:
            rows = list(self._scan(ScanRequest(request.key_range, request.where, after=after, limit=chunk)))
            if not rows:
                return
            yield rows
            if len(rows) < chunk:
                return
            after = sort_position(self.spec, rows[-1].values, None)

    def update_range(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        changes: Mapping[str, Any],
    ) -> int:
        """Apply ``changes`` to every row in range matching ``where``; rows changed."""
        values = validate_changes(self.spec, changes)
        expires = self._expiry(None)
        n = 0
        for rows in self._matching_chunks(range, where):
            for old in rows:
                self._write(key_of(self.spec, old.values), {**old.values, **values}, old, expires)
            n += len(rows)
        return n

    def delete_range(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """Delete every row in range matching ``where``; rows deleted."""
        n = 0
        for rows in self._matching_chunks(range, where):
            for old in rows:
                self._remove(key_of(self.spec, old.values), old)
            n += len(rows)
        return n

    def load(
        self,
        rows: Iterable[Mapping[str, Any]],
        *,
        mode: str = "upsert",
        batch_size: int = 10_000,
        progress: Callable[[int], None] | None = None,
        keep_versions: bool = False,
        ttl: int | float | None = None,
    ) -> int:
        """Bulk write ``rows`` in batches (validated before each is written); with
        ``keep_versions`` each row is written with its own ``version`` and expiry
        (``expires_at``: rows read from another table, see :mod:`spi.kept`), else with
        the expiry ``ttl`` gives (the table's when None) from the load's start."""
        plan = self.load_plan(ttl, keep_versions)
        return run_load(
            lambda batch, mode, kept: self.write_prepared(batch, mode, kept, plan.expires),
            plan.preparer,
            rows,
            mode=mode,
            batch_size=batch_size,
            progress=progress,
            keep_versions=keep_versions,
        )

    def _load_preparer(self) -> LoadPreparer:
        """How ``load`` turns input rows into what ``_load_batch`` takes (default:
        validated dicts); providers may validate and encode whole batches there."""
        return LoadPreparer(self.spec)

    def load_plan(self, ttl: int | float | None, keep_versions: bool) -> LoadPlan:
        """How this table takes a load (its preparer and its rows' expiry, from now):
        the seam the auto-commit handles load through, a batch per transaction."""
        return LoadPlan(self._load_preparer(), self._load_expiry(ttl, keep_versions))

    def write_prepared(self, batch: Any, mode: str, kept: Kept | None, expires: int | None) -> None:
        """Write a batch the plan's preparer prepared (``mode``: upsert, insert or
        replace; ``kept``: each row's kept version and expiry, or None to write them
        with ``expires``, the plan's)."""
        if kept is None:
            self._load_batch(batch, mode, expires)
        else:
            self._load_kept(batch, mode, kept)

    # ------------------------------------------------------------------- reads
    def read(self, key: KeyLike, *, columns: Iterable[str] | None = None) -> Row | None:
        """The row with this complete key, or None."""
        proj = None if columns is None else check_projection(self.spec, columns)
        stored = self._live(self._get(normalize_key(self.spec, key)))
        return None if stored is None else self._row(stored, proj)

    def read_many(self, keys: Iterable[KeyLike], *, columns: Iterable[str] | None = None) -> list[Row | None]:
        """Rows for ``keys``, in order (None for a missing one)."""
        proj = check_projection(self.spec, columns)
        normalized = [self._key(k) for k in keys]
        distinct = list(dict.fromkeys(normalized))
        found = dict(zip(distinct, self._get_many(distinct)))
        # One clock read, and only when a row expires (PostgreSQL's clock is a round trip).
        now = self._clock() if any(s is not None and s.expires is not None for s in found.values()) else None
        out: list[Row | None] = []
        for k in normalized:
            stored = self._live(found[k], now)
            out.append(None if stored is None else self._row(stored, proj))
        return out

    def _request(
        self,
        rng: Range | None,
        where: Expr | None,
        order_by: str | None,
        descending: bool,
        after: bytes | None,
        limit: int | None,
    ) -> ScanRequest:
        return ScanRequest(
            resolve_range(self.spec, rng),
            None if where is None else bind(where, self.spec),
            check_order_by(self.spec, order_by),
            bool(descending),
            after,
            limit,
        )

    def scan(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
        columns: Iterable[str] | None = None,
    ) -> Iterator[Row]:
        """Stream matching rows (validated now, read lazily)."""
        proj = check_projection(self.spec, columns)
        request = self._request(range, where, order_by, descending, None, check_limit(limit))
        if request.limit == 0:
            return iter(())
        rows = self._scan_rows(request)
        return rows if proj is None else (project(r, proj) for r in rows)

    def scan_batches(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[ColumnBatch]:
        """Stream matching rows in key order as column batches of at most ``batch_size``
        rows (validated now, read lazily): the rows and values ``scan`` returns, without
        versions, each batch holding ``columns`` (default: all) plus the key columns in
        declaration order."""
        proj = check_projection(self.spec, columns)
        size = check_batch_size(batch_size)
        request = self._request(range, where, None, False, None, None)
        return self._scan_batches(request, self.spec.columns if proj is None else proj, size)

    def scan_arrow(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[pa.RecordBatch]:
        """:meth:`scan_batches` as Arrow record batches (needs pyarrow): the same rows and
        values, typed by :func:`spi.arrow.arrow_type` (key columns non-nullable), each
        batch non-empty with at most ``batch_size`` rows (validated now, read lazily)."""
        proj = check_projection(self.spec, columns)
        size = check_batch_size(batch_size)
        request = self._request(range, where, None, False, None, None)
        return self._scan_arrow(request, self.spec.columns if proj is None else proj, size)

    def scan_page(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int,
        after: str | None = None,
        columns: Iterable[str] | None = None,
    ) -> Page:
        """One page of at most ``limit`` rows and the token to resume after it."""
        proj = check_projection(self.spec, columns)
        n = check_limit(limit, required=True)
        assert n is not None
        request = self._request(range, where, order_by, descending, None, n + 1)
        return read_page(self.spec, self._scan_list, request, after, proj)

    def multi_scan(
        self,
        ranges: Sequence[Range],
        *,
        where: Expr | None = None,
        limit: int | None = None,
        columns: Iterable[str] | None = None,
    ) -> Iterator[Row]:
        """The union of ``ranges`` in key order, each row once, ``limit`` on the result."""
        return merge_scans(self.spec, self.scan, ranges, where=where, limit=limit, columns=columns)

    def count(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """How many rows are in range and match ``where``."""
        request = self._request(range, where, None, False, None, None)
        return self._count(request.key_range, request.where)

    def split(self, n: int) -> list[Range]:
        """About ``n`` disjoint ranges covering the table, of similar row counts."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InvalidFieldError(f"split needs a positive number of ranges, got {n!r}")
        return self._split(n)

    def explain(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        order_by: str | None = None,
    ) -> str:
        """How the provider will run this scan."""
        request = self._request(range, where, order_by, False, None, None)
        return self._explain(request.key_range, request.where, request.order_by)


__all__ = [
    "ColumnBatch",  # defined in spi.primitives, re-exported for providers written against spi.table
    "ScanRequest",
    "Stored",
    "TableBase",
    "sort_position",
]
