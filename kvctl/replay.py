"""Applying change events to a destination store, one source revision at a time
(``kvctl apply`` and ``kvctl copy --follow``).

Each source revision becomes one destination transaction (or, when the destination
refuses one that large, consecutive pieces that fit: :meth:`Replayer.apply`): its puts write the event's
row with the event's version and expiry (a load that keeps versions, as ``copy``
writes rows; a put of a row the destination holds at exactly that version, expiry and
values is left out, so it records no second change event), its deletes and expiries
delete the key, and the revision is recorded
as the applied position of every (destination table, source) it concerns
(:mod:`spi.applied`) in that same transaction. The transaction first reads those
positions and leaves out the targets that have the revision already, so replaying
an overlapping stream, or a revision a killed run had committed, changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial

import spi
from spi import applied
from spi.changes import PUT
from spi.fitting import Fitting


@dataclass(frozen=True)
class Target:
    """Where the events of one source table go: the destination ``table`` and the
    ``source`` name its applied position is recorded under."""

    table: str
    source: str


Event = tuple[Target, spi.Change]
"""One event and where it goes."""


class Replayer:
    """Applies source revisions to one destination (:meth:`apply`), remembering how many
    events one destination transaction took once it refused a bigger one
    (:class:`spi.fitting.Fitting`), so later revisions go in pieces of that size."""

    def __init__(self, destination: spi.Provider) -> None:
        self.destination = destination
        self._fitting = Fitting()

    def apply(self, revision: int, events: Sequence[Event], also: Iterable[Target] = ()) -> bool:
        """Apply one source revision's ``events`` (in order) in one destination
        transaction and record ``revision`` for each of their targets and those of
        ``also`` (targets the revision did not touch but whose position may move on).
        False when every target had applied it already (nothing is written).

        A revision the destination refuses as one transaction for its size
        (:class:`spi.TransactionTooLargeError`: etcd's limits) is applied in pieces of
        consecutive events, each a transaction that fits, the position recorded with
        the last: a reader may see part of the revision until then, and a run stopped
        between pieces applies the whole revision again (puts keep versions, deletes
        are idempotent), so nothing is missed or left half done."""
        targets = list(dict.fromkeys([target for target, _ in events] + list(also)))

        def piece(start: int, stop: int) -> bool:
            last = stop == len(events)
            work = partial(_apply, revision=revision, events=events[start:stop], targets=targets, record=last)
            return self.destination.run(work)

        return any([wrote for _, wrote in self._fitting.pieces(len(events), piece)])


def _apply(tx: spi.Transaction, revision: int, events: Sequence[Event], targets: list[Target], record: bool) -> bool:
    """Apply ``events`` of the targets that lack ``revision`` and, if ``record``, record
    it for them; False when every target had it already."""
    due = {t for t in targets if (applied.position(tx, t.table, t.source) or 0) < revision}
    if not due:
        return False
    puts: list[spi.Row] = []
    into = ""  # the table of the puts waiting in ``puts``
    for target, event in events:
        if target not in due:
            continue
        if puts and (event.op != PUT or target.table != into):
            _load(tx.table(into), puts)
            puts = []
        if event.op == PUT:
            assert event.row is not None and event.version is not None
            into = target.table
            puts.append(spi.Row(event.row, event.version, event.expires_at))
        else:
            tx.table(target.table).delete(event.key)
    if puts:
        _load(tx.table(into), puts)
    if record:
        for target in due:
            applied.record(tx, target.table, target.source, revision)
    return True


def _load(table: spi.Table, puts: list[spi.Row]) -> None:
    """Write ``puts`` with their versions and expiries, but for the rows ``table``
    holds already with exactly that version, expiry and values: those are no-ops, so
    a put that an initial copy read ahead of its revision (``copy --follow``: a
    RocksDB snapshot is no single revision) records no second event."""
    columns, key = table.spec.columns, table.spec.primary_key
    held = table.read_many([tuple(row[c] for c in key) for row in puts])
    new = [
        row
        for row, old in zip(puts, held)
        if old is None
        or (old.version, old.expires) != (row.version, row.expires)
        or any(old.get(c) != row.get(c) for c in columns)
    ]
    if new:
        table.load(new, mode="upsert", keep_versions=True)


__all__ = ["Event", "Replayer", "Target"]
