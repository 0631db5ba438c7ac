"""Applied change-feed positions: how far a destination table has applied the change
feed of a source table (``kvctl apply``, ``kvctl copy --follow``, streaming sinks).

A position is the last source revision whose events were applied to a destination
table, per (destination table, source) — ``source`` is any name the applier chooses
(``kvctl apply``: the source table's name or ``--source NAME``). Positions live in the
destination store itself, in the hidden table ``kv_applied`` (key ``table``,
``source``; a ``revision`` long column), made by :func:`ensure_table` on first use, so
an applier records a revision with :func:`record` **in the transaction that writes
the revision's rows**: the rows and the position commit together or not at all, and a
resumed applier (after a crash, or a rerun over an overlapping stream) skips exactly
the revisions at or below :func:`position` — nothing missed, nothing applied twice.

``list_tables`` never shows the table (:func:`spi.staging.is_hidden`); ``admin.create``
takes its reserved name (:data:`spi.spec.APPLIED_TABLE`) and nothing else of ``kv_``.
Every provider stores it as any other table, so this works on all of them.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

from spi.errors import TableExistsError
from spi.protocols import Provider, Table
from spi.spec import APPLIED_TABLE, TableSpec

APPLIED_SPEC = TableSpec(
    APPLIED_TABLE,
    [("table", "string"), ("source", "string"), ("revision", "long")],
    primary_key=["table", "source"],
)
"""The spec of the positions table."""


class HasTables(Protocol):
    """A provider or a transaction: whatever hands out table handles."""

    def table(self, name: str) -> Table: ...


def ensure_table(provider: Provider) -> None:
    """Create the positions table unless the store has it (a concurrent creator is fine)."""
    if provider.admin.exists(APPLIED_TABLE):
        return
    with contextlib.suppress(TableExistsError):
        provider.admin.create(APPLIED_SPEC)


def position(handle: HasTables, table: str, source: str) -> int | None:
    """The last revision of ``source`` applied to ``table`` (None: none yet), read
    through ``handle`` (a transaction, to decide inside the one that will record the
    next). The positions table must exist (:func:`ensure_table`)."""
    row = handle.table(APPLIED_TABLE).read({"table": table, "source": source})
    return None if row is None else int(row["revision"])


def record(handle: HasTables, table: str, source: str, revision: int) -> None:
    """Record ``revision`` as the last one of ``source`` applied to ``table`` — in the
    transaction that applied its rows."""
    handle.table(APPLIED_TABLE).upsert({"table": table, "source": source, "revision": revision})


__all__ = ["APPLIED_SPEC", "HasTables", "ensure_table", "position", "record"]
