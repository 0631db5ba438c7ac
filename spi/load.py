"""Bulk loads: rows read in batches, each batch validated, then written.

:func:`run_load` drives a load for every provider; a :class:`LoadPreparer` says how
input rows become what a provider's batch writer takes. The default validates each
row into a dict as it is read; a provider may instead copy rows as they are read
and validate and encode a whole batch at once (:mod:`spi.kv.bulk`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

from spi.codec import encode_key
from spi.errors import InvalidFieldError, KvError, RowExistsError
from spi.keys import key_of
from spi.spec import TableSpec
from spi.textvalues import key_words
from spi.validate import check_batch_size, validate_row

LOAD_MODES = ("upsert", "insert", "replace")


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

    def prepare(self, taken: list[Any]) -> Any:
        """What the batch writer takes for the rows of :meth:`take` (here, the rows)."""
        return taken

    def key_of(self, row: Any) -> tuple[Any, ...]:
        """The key of a row of a :meth:`prepare`-d batch."""
        return key_of(self.spec, row)


def run_load(
    write_batch: Callable[[Any, str], None],
    preparer: LoadPreparer,
    rows: Iterable[Mapping[str, Any]],
    *,
    mode: str,
    batch_size: int,
    progress: Callable[[int], None] | None,
) -> int:
    """Validate and write ``rows`` in batches through ``write_batch``.

    A bad row fails its batch: the raised error carries ``row_index`` (0-based in
    ``rows``), ``column`` and ``rows_written`` (rows of the earlier batches). Within
    a batch, an invalid value is reported before a key repeated in an insert.
    """
    if mode not in LOAD_MODES:
        raise InvalidFieldError(f"load mode must be one of {', '.join(LOAD_MODES)}, got {mode!r}")
    check_batch_size(batch_size)
    source = iter(rows)
    held = isinstance(rows, (list, tuple))
    written = 0
    taken: list[Any] = []
    while True:
        try:
            taken = preparer.take(source, batch_size, held=held)
            if not taken:
                return written
            batch = preparer.prepare(taken)
            if mode == "insert":
                _check_distinct(preparer, taken)
            write_batch(batch, mode)
        except KvError as exc:
            if exc.row_index is None:
                exc.row_index = _batch_position(preparer, taken, exc)
            exc.row_index += written
            exc.rows_written = written
            exc.args = (f"row {exc.row_index}: {exc}",)
            raise
        written += len(taken)
        if progress is not None:
            progress(written)
        if len(taken) < batch_size:
            return written


def _check_distinct(preparer: LoadPreparer, taken: list[Any]) -> None:
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


def _batch_position(preparer: LoadPreparer, taken: list[Any], exc: KvError) -> int:
    """Position in the batch of the row an error is about (by key), else 0."""
    key = getattr(exc, "key", None)
    if key is not None:
        for i, row in enumerate(taken):
            if preparer.key_of(row) == tuple(key):
                return i
    return 0
