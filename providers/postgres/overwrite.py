"""The change-feed events of ``swap_rows`` (SPI.md, "Overwrites").

PostgreSQL swaps two tables' rows by renaming the tables, and a change feed names a
table by its name, so the rows need not move: only the events are added, in the
swap's transaction (recorded at its commit under its one revision, with its NOTIFY).
One statement pairs the two tables' rows by key (a ``FULL JOIN``), in key order, both
tables locked first so that no write slips in between it and the renames; its rows
are streamed through a server-side cursor. For each key, for each change-fed table
(the first's event before the second's): an ``"expire"`` event when its old row had
expired (as a write that meets one records), then a ``"put"`` of the other table's
live row (``created`` when no live row was there; unchanged rows included), or a
``"delete"`` of its live row when the other table has none.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa

from providers.postgres.feed import OP_EXPIRE, Event, delete_event, put_event
from providers.postgres.schema import EXPIRES, VERSION, live, qualified
from providers.postgres.table import FETCH_ROWS
from providers.postgres.table_sql import TableSql
from providers.postgres.transaction import PgTransaction
from spi.keys import key_of
from spi.primitives import Stored
from spi.spec import TableSpec

_Side = tuple[Stored, bool] | None
"""A table's row of one key in the swap: the row and whether it is live (None: no row)."""


def record_swap(tx: PgTransaction, schema: str, first: TableSql, second: TableSql) -> None:
    """Add to ``tx``'s events those of exchanging the rows of the two tables (at least
    one change-fed), before the renames that exchange them."""
    q = functools.partial(qualified, tx.dialect)
    tx.execute(
        sa.text(f"LOCK TABLE {q(schema, first.spec.name)}, {q(schema, second.spec.name)} IN ACCESS EXCLUSIVE MODE")
    )
    a, b = first.table.alias("kv_a"), second.table.alias("kv_b")
    spec = first.spec
    width = len(spec.columns) + 2

    def side(t: Any) -> list[Any]:  # an alias of the table: live() reads its columns alike
        present = t.c[VERSION].is_not(None)
        return [*(t.c[c] for c in spec.columns), t.c[VERSION], t.c[EXPIRES], sa.and_(present, live(t))]

    joined = a.join(b, sa.and_(*(a.c[k] == b.c[k] for k in spec.primary_key)), full=True)
    order = [sa.func.coalesce(a.c[k], b.c[k]) for k in spec.primary_key]
    fed = [s for s in ((first, 0, width + 1), (second, width + 1, 0)) if s[0].spec.changes]
    events = tx.events
    cursor = tx.query(sa.select(*side(a), *side(b)).select_from(joined).order_by(*order), stream=True)
    try:
        while rows := cursor.fetchmany(FETCH_ROWS):
            for row in rows:
                for sql, own, others in fed:
                    _add(events, sql.spec, _side(sql, row, own, width), _side(sql, row, others, width))
    finally:
        cursor.close()


def _side(sql: TableSql, row: Any, at: int, width: int) -> _Side:
    """One table's row within a fetched row (its columns from ``at``)."""
    if row[at + width - 2] is None:  # no version: no row
        return None
    return sql.stored(row[at : at + width]), bool(row[at + width])


def _add(events: list[Event], spec: TableSpec, old: _Side, new: _Side) -> None:
    """The events of one table's row ``old`` becoming ``new``'s row (if live)."""
    prev: Stored | None = None
    if old is not None:
        prev = old[0]
        if not old[1]:
            events.append(delete_event(spec, key_of(spec, prev.values), prev.values, OP_EXPIRE))
            prev = None
    if new is not None and new[1]:
        row = new[0]
        before = None if prev is None else prev.values
        events.append(put_event(spec, key_of(spec, row.values), row.values, row.version, row.expires, before))
    elif prev is not None:
        events.append(delete_event(spec, key_of(spec, prev.values), prev.values))


__all__ = ["record_swap"]
