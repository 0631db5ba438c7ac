"""Counting a table's rows in short steps, so a count never holds up the pages.

A single ``count`` is one transaction, and embedded stores (RocksDB, memory) serve one
transaction of a process at a time: counting a million filtered rows that way would
stall every page read for seconds. Instead the keys are walked in chunks of
:data:`CHUNK` (a keys-only ``scan_page``, each its own short transaction); with a
filter each chunk's key range is then counted with ``count(range, where=...)``.
Between chunks the counter reports progress, may be stopped, and steps aside so a
waiting page read gets the store first.

Two counts need no walk and take one ``count`` call: every row of a table (an
embedded store keeps a row counter per table: no row is read), and any count on a
server store (``server``: PostgreSQL counts in the server, on a connection of its
own, while this process waits without holding up its pages).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import spi

CHUNK = 10_000
"""Keys per step: a few tens of milliseconds of store time on a laptop."""
PAUSE = 0.002
"""Seconds to step aside between chunks (a waiting page read takes the store)."""


def count_rows(
    table: spi.Table,
    spec: spi.TableSpec,
    where: spi.Expr | None,
    progress: Callable[[int], bool],
    *,
    server: bool = False,
) -> int | None:
    """The number of rows matching ``where``; None if ``progress(counted_so_far)``, called
    before every chunk, returned False (the count was abandoned). ``progress`` may
    block to hold the count back. Every row, or on a ``server`` store, one call."""
    if where is None or server:
        return table.count(where=where) if progress(0) else None
    total = 0
    token: str | None = None
    last: tuple[Any, ...] | None = None
    while True:
        if not progress(total):
            return None
        page = table.scan_page(limit=CHUNK, after=token, columns=[])
        if where is None:
            total += len(page.rows)
        elif page.rows or last is not None:
            end = None if page.next_token is None else tuple(page.rows[-1][c] for c in spec.primary_key)
            rng = spi.Range(start=last, end=end, start_inclusive=False, end_inclusive=True)
            total += table.count(rng, where=where)
            last = end
        if page.next_token is None:
            return total
        token = page.next_token
        time.sleep(PAUSE)


__all__ = ["CHUNK", "count_rows"]
