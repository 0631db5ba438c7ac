"""Loads that keep each row's version (``load(..., keep_versions=True)``): copies,
backups and restores write a row with the version it had where it was read.

The modes mean what they mean for any load (``insert`` refuses an existing key,
``upsert`` merges the given columns into an existing row, ``replace`` writes the
whole row), except that the row's version is the one it carries instead of the next
one. :func:`load_kept` is the generic batch writer (:meth:`TableBase._load_kept`'s
default), built on the same primitives as every other write.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from spi.errors import RowExistsError
from spi.keys import key_of
from spi.primitives import Kept, Stored
from spi.spec import TableSpec
from spi.validate import full_row


class KeptTarget(Protocol):
    """The primitives of :class:`spi.table.TableBase` a kept write uses."""

    spec: TableSpec

    def _put(
        self, key: tuple[Any, ...], values: dict[str, Any], version: int, old: Stored | None, expires: int | None
    ) -> None: ...

    def _current(self, key: tuple[Any, ...]) -> Stored | None: ...

    def _current_many(self, keys: list[tuple[Any, ...]]) -> list[Stored | None]: ...

    def _exists_error(self, key: tuple[Any, ...]) -> RowExistsError: ...


def write_kept(
    table: KeptTarget,
    key: tuple[Any, ...],
    values: dict[str, Any],
    version: int,
    expires: int | None,
    old: Stored | None,
    mode: str,
) -> None:
    """Write validated ``values`` under ``key`` over ``old`` (the live row stored
    there) as ``mode`` says, with ``version`` and expiry ``expires``."""
    if old is not None and mode == "insert":
        raise table._exists_error(key)
    merged = {**old.values, **values} if old is not None and mode == "upsert" else full_row(table.spec, values)
    table._put(key, merged, version, old, expires)


def load_kept(table: KeptTarget, rows: list[dict[str, Any]], mode: str, kept: Kept) -> None:
    """Write a batch of validated rows, row ``i`` with version ``kept.versions[i]``,
    and expiry ``kept.expires[i]``, exactly like one write per row in order (an
    ``insert`` batch that meets an existing key fails before any write, as
    :meth:`TableBase._load_batch` does)."""
    spec = table.spec
    keys = [key_of(spec, values) for values in rows]
    olds: Iterable[Stored | None]
    if len(set(keys)) == len(keys):
        olds = table._current_many(keys)
        existing = next((k for k, o in zip(keys, olds) if o is not None), None) if mode == "insert" else None
        if existing is not None:
            raise table._exists_error(existing)
    else:
        olds = map(table._current, keys)  # lazy: each read follows the writes before it
    for key, values, old, version, expires in zip(keys, rows, olds, kept.versions, kept.expires):
        write_kept(table, key, values, version, expires, old, mode)
