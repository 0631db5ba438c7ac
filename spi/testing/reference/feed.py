"""The reference model's change feed: a plain list of every recorded event.

A transaction collects ``(table, op, key, row, version, created, prev)`` as its
tables write, in call order; when it commits with any, the store's revision goes up by one and the
events join the log under it. ``changes`` filters the log linearly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any

from spi.changes import Change
from spi.errors import InvalidFieldError, RevisionCompactedError, SchemaError, TableNotFoundError
from spi.keys import normalize_prefix
from spi.spec import TableSpec
from spi.testing.reference.checks import check_key, check_limit, is_count
from spi.testing.reference.order import compare_tuples

Pending = list[tuple[str, str, tuple[Any, ...], dict[str, Any] | None, int | None, bool | None, dict[str, Any] | None]]
"""A transaction's events before commit: (table, op, key, row, version, created, prev)."""


class Feed:
    """Every recorded event of one reference store, and its revision."""

    def __init__(self) -> None:
        self.revision = 0
        self.compacted = 0
        self.log: list[tuple[Any, ...]] = []  # (revision, *pending event, commit time)

    def commit(self, pending: Pending) -> None:
        """Record a committed transaction's events under a new revision (none: nothing)."""
        if not pending:
            return
        self.revision += 1
        now = dt.datetime.now(dt.UTC)
        self.log.extend((self.revision, *event, now) for event in pending)

    def compact(self, revision: Any) -> None:
        """Forget events up to ``revision``."""
        if not is_count(revision, least=0) or revision > self.revision:
            raise InvalidFieldError(f"cannot compact through {revision!r} (revision {self.revision})")
        self.compacted = max(self.compacted, revision)
        self.log = [e for e in self.log if e[0] > self.compacted]

    def changes(
        self,
        specs: dict[str, TableSpec],
        tables: Any,
        since: Any,
        key: Any,
        prefix: Any,
        limit: Any,
        prev: Any = False,
        ops: Any = None,
    ) -> Iterator[Change]:
        """The events of the change-fed tables among ``specs`` (all of them for
        ``tables=None``) after ``since``, filtered by ``key`` or ``prefix`` and ``ops``;
        ``prev``: with the row before each write."""
        names = _names(specs, tables)
        if not isinstance(prev, bool):
            raise InvalidFieldError(f"prev must be True or False, got {prev!r}")
        kept = None if ops is None else ({ops} if isinstance(ops, str) else set(ops))
        if kept is not None and not kept <= {"put", "delete", "expire"}:
            raise InvalidFieldError(f"ops may name only put, delete, expire, got {ops!r}")
        if not is_count(since, least=0):
            raise InvalidFieldError(f"since must be a non-negative integer, got {since!r}")
        n = check_limit(limit)
        if since < self.compacted:
            raise RevisionCompactedError(f"compacted through {self.compacted}", oldest=self.compacted)
        wanted: tuple[Any, ...] | None = None
        if key is not None or prefix is not None:
            if len(names) != 1 or (key is not None and prefix is not None) or tables is None:
                raise InvalidFieldError("a key or prefix filter needs exactly one table")
            spec = specs[names[0]]
            wanted = check_key(spec, key) if key is not None else normalize_prefix(spec, prefix)
        out = []
        for revision, table, op, k, row, version, created, before, when in self.log:
            if revision <= since or table not in names or (kept is not None and op not in kept):
                continue
            if wanted is not None and compare_tuples(k[: len(wanted)], wanted) != 0:
                continue
            spec = specs[table]
            old = before if prev else None
            out.append(Change(revision, table, op, dict(zip(spec.primary_key, k)), row, version, when, created, old))
        return iter(out if n is None else out[:n])


def _names(specs: dict[str, TableSpec], tables: Any) -> list[str]:
    if tables is None:
        return [name for name, spec in specs.items() if spec.changes]
    names = [tables] if isinstance(tables, str) else list(tables) if isinstance(tables, Sequence) else None
    if names is None:
        raise InvalidFieldError(f"tables must be a name or a list of names, got {tables!r}")
    for name in names:
        if name not in specs:
            raise TableNotFoundError(f"table {name!r} does not exist")
        if not specs[name].changes:
            raise SchemaError(f"table {name!r} records no change feed")
    return names
