"""Bulk loads: rows read in batches, each batch validated, then written.

:func:`run_load` drives a load for every provider; a :class:`LoadPreparer` says how
input rows become what a provider's batch writer takes. The default validates each
row into a dict as it is read; a provider may instead copy rows as they are read
and validate and encode a whole batch at once (:mod:`spi.kv.bulk`). A load that
keeps versions (``keep_versions=True``) reads each row's version as it takes the
row (:class:`_VersionReader`) and hands the batch's versions to the writer. Rows
already validated by the caller (:class:`spi.validated.ValidatedRows`) are not
validated again.
A provider whose writer mostly waits on a server may write the next batch alongside
the current one (an :data:`AheadWriter`); batches still commit in input order
(:func:`_pipelined`). A batch the store refuses for its size
(:class:`~spi.errors.TransactionTooLargeError`: nothing of it written) is written in
smaller pieces, each atomic, and so are the batches after it (:class:`_CutToFit`).
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from itertools import islice, repeat
from typing import Any, NamedTuple

from spi.codec import encode_key, to_micros
from spi.errors import (
    InvalidFieldError,
    KvError,
    LimitExceededError,
    RowExistsError,
    RowNotFoundError,
    VersionMismatchError,
)
from spi.fitting import Fitting
from spi.keys import key_of
from spi.primitives import Kept
from spi.spec import TableSpec
from spi.textvalues import key_words
from spi.types import INT64_MAX
from spi.validate import check_batch_size, validate_row
from spi.validated import ArrowRows, ColumnFeed, ValidatedRows

LOAD_MODES = ("upsert", "insert", "replace")


class LoadPlan(NamedTuple):
    """How a table takes one load (:meth:`spi.table.TableBase.load_plan`): the
    preparer of its batches and the expiry of its rows (None: none, or each row's own
    when versions are kept)."""

    preparer: LoadPreparer
    expires: int | None


class LoadPreparer:
    """How a load turns input rows into batches (default: validated dicts).

    :meth:`take` reads a batch and must leave it safe from later changes to the
    input rows (a generator may yield one dict again and again, changing it
    between yields); :meth:`prepare`
    turns it into what the batch writer takes. Either raises :class:`KvError` for a
    bad row, with ``row_index`` set to the row's position in the batch.
    """

    def __init__(self, spec: TableSpec) -> None:
        self.spec = spec

    def take(self, rows: Iterator[Any], n: int, *, held: bool) -> list[Any]:
        """Up to ``n`` rows from ``rows``, each validated as it is read. ``held``: the
        rows come from a list or tuple, so nothing changes them between yields."""
        spec = self.spec
        taken: list[Any] = []
        for row in islice(rows, n):
            try:
                taken.append(validate_row(spec, row))
            except KvError as exc:
                exc.row_index = len(taken)
                raise
        return taken

    def take_validated(self, feed: ColumnFeed, n: int) -> Sequence[Any]:
        """Up to ``n`` rows of a :class:`~spi.validated.ValidatedRows` made for this preparer's spec
        (``feed.take(n)``: their columns), not validated again: here as the dicts
        :meth:`take` makes (a provider may keep the columns for its :meth:`prepare`
        and :meth:`key_of`, as :class:`ColumnRows`)."""
        return list(map(dict, map(zip, repeat(self.spec.columns), zip(*feed.take(n)))))

    def prepare(self, taken: Sequence[Any]) -> Any:
        """What the batch writer takes for the rows of :meth:`take` (here, the rows)."""
        return taken

    def key_of(self, row: Any) -> tuple[Any, ...]:
        """The key of a row of a :meth:`prepare`-d batch."""
        return key_of(self.spec, row)

    def key_set(self, taken: Sequence[Any]) -> set[tuple[Any, ...]]:
        """The keys of the rows ``taken`` (as :meth:`key_of` gives them)."""
        if type(taken) is ArrowRows:
            return taken.key_set(self.spec.primary_key)
        return set(map(self.key_of, taken))


BatchWriter = Callable[[Any, str, Kept | None], None]
"""Writes one prepared batch: ``(batch, mode, kept)``, ``kept`` None unless the load
keeps versions."""

AheadWriter = Callable[[Any, str, Callable[[float], bool]], bool]
"""Writes one prepared batch ``(batch, mode, turn)`` while the batch before it is
being written, in a transaction of its own: only if every row goes in as a new row
(no key of the batch is taken, expired or not), and then it waits for its turn before
committing: ``turn(seconds)`` is True once the batch before has committed, False
while it has not after ``seconds``, and raises if that one failed (then it rolls
back). False: nothing written, as the batch could not go in as new rows or gave way
(it is then written after the one before, by the :data:`BatchWriter`)."""


class _BadVersion(Exception):
    """A row without a usable version in a load that keeps versions (not a
    :class:`KvError`, so preparers let it through to :func:`run_load`)."""

    def __init__(self, index: int, version: Any) -> None:
        super().__init__(index, version)
        self.index = index
        self.version = version


class _VersionReader:
    """The input rows of a load that keeps versions, each one's version read as the
    load takes it: :attr:`versions` and :attr:`rows` hold those of the current batch."""

    def __init__(self, rows: Iterator[Any]) -> None:
        self._source = rows
        self.versions: list[int] = []
        self.expires: list[int | None] = []
        self.rows: list[Any] = []

    def next_batch(self) -> None:
        """Start a new batch."""
        self.versions, self.expires, self.rows = [], [], []

    def __iter__(self) -> Iterator[Any]:
        for row in self._source:
            version = getattr(row, "version", None)
            if type(version) is not int or not 1 <= version <= INT64_MAX:
                raise _BadVersion(len(self.versions), version)
            self.versions.append(version)
            if getattr(row, "mapping", None) is not None:  # a Row of any type (isinstance costs more)
                self.expires.append(row.expires)
                values = row.to_dict()
            else:
                expires_at = getattr(row, "expires_at", None)
                self.expires.append(None if expires_at is None else to_micros(expires_at))
                values = dict(row) if isinstance(row, Mapping) else row
            self.rows.append(values)
            yield values


def run_load(
    write_batch: BatchWriter,
    preparer: LoadPreparer,
    rows: Iterable[Mapping[str, Any]],
    *,
    mode: str,
    batch_size: int,
    progress: Callable[[int], None] | None,
    keep_versions: bool = False,
    write_ahead: AheadWriter | None = None,
) -> int:
    """Validate and write ``rows`` in batches through ``write_batch``.

    A bad row fails its batch: the raised error carries ``row_index`` (0-based in
    ``rows``), ``column`` and ``rows_written`` (rows of the earlier batches). Within
    a batch, an invalid value is reported before a key repeated in an insert. With
    ``keep_versions`` every row needs a ``version`` (a positive 64-bit integer, as
    :class:`Row` has); a row without one is an :class:`InvalidFieldError`, reported
    after any bad value in an earlier row of its batch. With ``write_ahead`` (a load
    that does not keep versions) batches go two at a time (:func:`_pipelined`).
    """
    if mode not in LOAD_MODES:
        raise InvalidFieldError(f"load mode must be one of {', '.join(LOAD_MODES)}, got {mode!r}")
    check_batch_size(batch_size)
    reader = _VersionReader(iter(rows)) if keep_versions else None
    spec = preparer.spec
    take: Callable[[], Sequence[Any]]
    if reader is None and isinstance(rows, ValidatedRows) and rows.spec == spec and rows.spec.columns == spec.columns:
        take = partial(preparer.take_validated, ColumnFeed(spec, rows.batches, arrow=rows.arrow), batch_size)
    else:
        source = iter(rows) if reader is None else iter(reader)
        held = isinstance(rows, (list, tuple))
        take = partial(_take, preparer, source, batch_size, held, reader)
    batches = _prepared(preparer, take, mode, batch_size, reader)
    if write_ahead is not None and reader is None:
        distinct = isinstance(rows, ValidatedRows) and rows.distinct_keys
        return _pipelined(write_batch, write_ahead, preparer, batches, mode, progress, distinct=distinct)
    written = 0
    fit = _CutToFit(write_batch, preparer, mode)
    try:
        for taken, batch in batches:
            for n in fit.write(taken, batch, None if reader is None else Kept(reader.versions, reader.expires)):
                written += n
                if progress is not None:
                    progress(written)
    except KvError as exc:
        _failed(exc, preparer, fit.current, written)
        raise
    return written


class _CutToFit:
    """Writes batches whole until the store refuses one for its size; then in pieces
    that fit (:class:`spi.fitting.Fitting`), later batches in pieces of the size that
    went in. :attr:`current` is the rows of the piece being written (for errors)."""

    def __init__(self, write_batch: BatchWriter, preparer: LoadPreparer, mode: str) -> None:
        self._write_batch = write_batch
        self._preparer = preparer
        self._mode = mode
        self._fitting = Fitting()
        self.current: Sequence[Any] = []

    def write(self, taken: Sequence[Any], batch: Any, kept: Kept | None) -> Iterator[int]:
        """Write the rows ``taken`` (prepared as ``batch``); yields the rows of each
        piece as it commits."""

        def piece(start: int, stop: int) -> int:
            whole = stop - start == len(taken)
            rows = taken if whole else taken[start:stop]  # a list, or ColumnRows again
            self.current = rows
            part = kept if kept is None or whole else Kept(kept.versions[start:stop], kept.expires[start:stop])
            self._write_batch(batch if whole else self._preparer.prepare(rows), self._mode, part)
            return len(rows)

        for _, n in self._fitting.pieces(len(taken), piece):
            yield n


_ROW_ERRORS = (InvalidFieldError, LimitExceededError, RowExistsError, RowNotFoundError, VersionMismatchError)
"""The errors a write of a batch raises about one of its rows (a value, a key, a row
too large for one transaction); any other (the store unavailable or out of space, a
conflict, a frozen table) is about the store, and names no row."""


def _failed(exc: KvError, preparer: LoadPreparer, taken: Sequence[Any], written: int) -> None:
    """Set on ``exc``, about the batch ``taken`` after ``written`` rows: ``rows_written``
    and, for an error about a row, its ``row_index`` in the whole input (a write's
    error found by key) and the row in its message."""
    exc.rows_written = written
    if exc.row_index is None and isinstance(exc, _ROW_ERRORS):  # a write's error about the batch being written
        exc.row_index = _batch_position(preparer, taken, exc)
    if exc.row_index is not None:
        exc.row_index += written
        exc.args = (f"row {exc.row_index}: {exc}",)


def _pipelined(
    write_batch: BatchWriter,
    write_ahead: AheadWriter,
    preparer: LoadPreparer,
    batches: Iterator[tuple[Sequence[Any], Any]],
    mode: str,
    progress: Callable[[int], None] | None,
    *,
    distinct: bool = False,
) -> int:
    """Two batches at a time, each in a thread of its own: a batch whose keys are not
    those of the batch before (every batch's, when the rows are known to be
    ``distinct``) goes in as new rows (``write_ahead``) while that one is
    written, committing right after it; else (or when its rows are not all new) it is
    written after it (``write_batch``). Batches commit in input order, and errors come
    as one batch at a time raises them: a batch's (preparation included) once every
    batch before it is written, and nothing of the batches after it is written."""
    from concurrent.futures import Future, ThreadPoolExecutor

    written = 0
    window: deque[tuple[Sequence[Any], Future[None]]] = deque()
    before: tuple[set[Any] | None, _Turn] | None = None  # the keys of the batch before, and its turn

    def finish_oldest() -> None:
        nonlocal written
        taken, future = window.popleft()
        try:
            future.result()
        except KvError as exc:
            _failed(exc, preparer, taken, written)
            raise
        written += len(taken)
        if progress is not None:
            progress(written)

    with ThreadPoolExecutor(2, thread_name_prefix="spi-load") as pool:
        try:
            for taken, batch in batches:
                if len(window) == 2:
                    finish_oldest()
                turn, keys = _Turn(), None if distinct else preparer.key_set(taken)
                # Else one would wait for the other's keys.
                ahead = before is not None and (before[0] is None or keys is None or before[0].isdisjoint(keys))
                previous = None if before is None else before[1]
                task = pool.submit(
                    _write_in_turn, write_batch, write_ahead if ahead else None, batch, mode, previous, turn
                )
                window.append((taken, task))
                before = (keys, turn)
            while window:
                finish_oldest()
        except KvError as exc:
            if exc.rows_written is None:  # a batch's preparation: after the batches before it
                while window:
                    finish_oldest()
                _failed(exc, preparer, [], written)
            raise
        except BaseException:  # an interrupt: the batches under way commit all the same; count them
            with contextlib.suppress(Exception):
                while window:
                    finish_oldest()
            raise
    return written


def _write_in_turn(
    write_batch: BatchWriter,
    write_ahead: AheadWriter | None,
    batch: Any,
    mode: str,
    previous: _Turn | None,
    turn: _Turn,
) -> None:
    """Write ``batch`` (ahead of ``previous``, when ``write_ahead`` is given), committing
    after ``previous`` does; nothing when ``previous`` fails."""
    try:
        if write_ahead is None or previous is None or not write_ahead(batch, mode, previous.wait):
            if previous is not None:
                previous.wait()
            write_batch(batch, mode, None)
        turn.committed = True
    finally:
        turn.done.set()


class _Turn:
    """When the batch written ahead may commit: once the batch before it is done, if
    that one committed."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.committed = False

    def wait(self, seconds: float | None = None) -> bool:
        """True once the batch before has committed (False if it has not within
        ``seconds``); raise if it failed."""
        if not self.done.wait(seconds):
            return False
        if not self.committed:
            raise _Abandoned
        return True


class _Abandoned(Exception):
    """The batch written ahead rolls back: the batch before it failed."""


def _prepared(
    preparer: LoadPreparer,
    take: Callable[[], Sequence[Any]],
    mode: str,
    batch_size: int,
    reader: _VersionReader | None,
) -> Iterator[tuple[Sequence[Any], Any]]:
    """Each batch's rows and what the writer takes for them, until the input ends; an
    error about a row of a batch carries its ``row_index`` in the batch."""
    while True:
        taken: Sequence[Any] = []
        try:
            if reader is not None:
                reader.next_batch()
            taken = take()
            if not taken:
                return
            batch = preparer.prepare(taken)
            if mode == "insert":
                _check_distinct(preparer, taken)
        except KvError as exc:
            if exc.row_index is None:
                exc.row_index = _batch_position(preparer, taken, exc)
            raise
        yield taken, batch
        if len(taken) < batch_size:
            return


def _take(
    preparer: LoadPreparer, source: Iterator[Any], n: int, held: bool, reader: _VersionReader | None
) -> list[Any]:
    """``preparer.take``; a row without a version fails after the rows before it are
    validated (so the first bad row of the batch is the one reported)."""
    try:
        return preparer.take(source, n, held=held)
    except _BadVersion as bad:
        assert reader is not None
        earlier = reader.rows[: bad.index]
        if earlier:
            preparer.prepare(preparer.take(iter(earlier), len(earlier), held=True))
        error = InvalidFieldError(
            f"the row has no usable version ({bad.version!r}); a load that keeps versions takes rows "
            "with a positive integer version, as spi.Row has"
        )
        error.row_index = bad.index
        raise error from None


def _check_distinct(preparer: LoadPreparer, taken: Sequence[Any]) -> None:
    types = preparer.spec.key_types
    seen: set[bytes] = set()
    for i, row in enumerate(taken):
        key = preparer.key_of(row)
        encoded = encode_key(types, key)
        if encoded in seen:
            error = RowExistsError(f"key {key_words(preparer.spec, key)} appears twice in the input", key=key)
            error.row_index = i
            raise error
        seen.add(encoded)


def _batch_position(preparer: LoadPreparer, taken: Sequence[Any], exc: KvError) -> int:
    """Position in the batch of the row an error is about (by key), else 0."""
    key = getattr(exc, "key", None)
    if key is not None:
        for i, row in enumerate(taken):
            if preparer.key_of(row) == tuple(key):
                return i
    return 0
