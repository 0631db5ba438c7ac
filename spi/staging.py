"""Staging tables: how ``import --mode overwrite`` and ``copy --mode overwrite``
replace a table's rows atomically.

``p.admin.create_staging(name)`` makes an empty hidden table with ``name``'s spec and
returns its name; the rows are loaded into it; ``p.admin.swap_rows(name, staging)``
exchanges the two tables' rows in one commit; dropping the staging table then drops
the old rows. A run killed before the swap leaves the table untouched and a staging
table behind, which the next ``create_staging`` of the same table drops.

A staging table has no change feed (loading it records nothing). Swapping the rows
of a change-fed table records, in the swap's one commit and under its one revision,
the events that take a reader applying the feed from the old rows to the new ones
(SPI.md, "Overwrites"): key by key, in key order, an ``"expire"`` for an old row that
had expired, then a ``"put"`` of each new row (``created`` False where a live row
was, unchanged rows included) or a ``"delete"`` of each old row the new rows lack.

A staging table's name is ``kv_stage_<table>_<8 hex digits>`` (a long table name is
cut and followed by a digest of it, so the name stays within 63 characters), so it
can never be a user's table and tells which table it stages for. ``list_tables``
never shows one; ``exists``, ``get_spec``, ``drop`` and the table handles take its
name like any other.
"""

from __future__ import annotations

import hashlib
import re
import secrets

from spi.errors import IncompatibleSchemaError
from spi.spec import APPLIED_TABLE, MAX_NAME_LENGTH, STAGING_PREFIX, TableSpec

_TOKEN_DIGITS = 8
_SUFFIX = re.compile(rf"_[0-9a-f]{{{_TOKEN_DIGITS}}}\Z")
_LONGEST_BASE = MAX_NAME_LENGTH - 1 - _TOKEN_DIGITS


def staging_base(table: str) -> str:
    """What every staging table of ``table`` is named before its ``_<token>``."""
    base = STAGING_PREFIX + table
    if len(base) <= _LONGEST_BASE:
        return base
    digest = hashlib.sha256(table.encode()).hexdigest()[:12]
    return f"{base[: _LONGEST_BASE - len(digest) - 1]}_{digest}"


def new_staging_name(table: str) -> str:
    """A fresh staging table name for ``table``."""
    return f"{staging_base(table)}_{secrets.token_hex(_TOKEN_DIGITS // 2)}"


def is_staging(name: str) -> bool:
    """True if ``name`` is a staging table's name."""
    return name.startswith(STAGING_PREFIX) and _SUFFIX.search(name) is not None


def is_hidden(name: str) -> bool:
    """True for the tables ``list_tables`` never shows: staging tables and the applied
    positions table (:mod:`spi.applied`)."""
    return name == APPLIED_TABLE or is_staging(name)


def stages(name: str, table: str) -> bool:
    """True if ``name`` is the name of a staging table of ``table``."""
    return is_staging(name) and name[: -1 - _TOKEN_DIGITS] == staging_base(table)


__all__ = ["is_hidden", "is_staging", "new_staging_name", "stages", "staging_base"]


def check_swappable(first: TableSpec, second: TableSpec) -> None:
    """:class:`IncompatibleSchemaError` unless the two tables may swap rows: the same
    fields, key, indexes and ttl (whether each records a change feed may differ); and
    :class:`~spi.errors.FrozenTableError` when either is frozen."""
    first.check_writable()
    second.check_writable()
    if first.renamed(second.name).with_changes(second.changes) != second:
        raise IncompatibleSchemaError(
            f"cannot swap the rows of {first.name!r} and {second.name!r}: their fields, keys or indexes differ"
        )
