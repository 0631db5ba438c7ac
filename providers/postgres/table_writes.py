"""Writes as single statements: :class:`NativeWrites`, the write half of a PostgreSQL
table.

Each single-key write is one statement of :mod:`providers.postgres.write_sql`
(``INSERT … ON CONFLICT … DO UPDATE … RETURNING``, ``UPDATE … RETURNING``, ``DELETE …
RETURNING``) with the version, condition and expiry rules in SQL; range writes are one
set-based ``UPDATE``/``DELETE`` on the compiled range and filter. What the statement
cannot decide alone (a failed condition's exact error, a value out of range) goes to
:class:`~spi.table.TableBase`'s general path, which stays the semantic reference: the
statement changed nothing in those cases, so the general path starts from the same
state. A change-fed table gets its events from ``RETURNING`` (the row as written).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from providers.postgres.feed import OP_DELETE, OP_EXPIRE, Event, delete_event, put_event
from providers.postgres.scan_sql import live_rows
from providers.postgres.schema import EXPIRES, VERSION, expiry_now
from providers.postgres.session import PgSession
from providers.postgres.table_sql import TableSql
from providers.postgres.write_sql import DOUBLE_GUARD, WriteSql, WriteStatement, write_sql
from spi.codec import encode_key
from spi.filters import Expr
from spi.keys import KeyLike, Range, key_of
from spi.spec import TableSpec
from spi.table import TableBase
from spi.types import IntegerType, validate_value
from spi.validate import checked_version, full_row, validate_changes, validate_row
from spi.writerules import created, increment_bounds


class NativeWrites(TableBase):
    """The SPI's writes of one table as single statements (see the module docs)."""

    spec: TableSpec
    _tx: PgSession
    _sql: TableSql
    _events: list[Event] | None

    @property
    def _writes(self) -> WriteSql:
        return write_sql(self.spec, self._sql.table.schema or "", self._tx.dialect, self._sql.clock)

    @property
    def _in_statement(self) -> bool:
        """Whether the write statements record this table's change events themselves."""
        return self._events is not None and self._tx.records_events

    def _params(self, key: tuple[Any, ...], ttl: int | None) -> dict[str, Any]:
        """The parameters every write statement takes (and the encoded key its events name)."""
        params = self._writes.params(self.name, key, ttl)
        if self._in_statement:
            params["kv_key"] = encode_key(self.spec.key_types, key)
        return params

    def _statement(self, statement: WriteStatement, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The statement's row (its first value the catalog's fingerprint, or ``true``
        for a lean statement), or None when the write matched nothing (for a lean
        statement: or the spec changed; the general path then answers)."""
        first = self._tx.write(statement.text, params, self._writes.fingerprint if statement.checked else None)
        return None if first is None or first[1] is None else first

    def _key_row(self, key: tuple[Any, ...], values: Mapping[str, Any]) -> dict[str, Any]:
        """A full row: ``key``, then ``values``, null elsewhere."""
        return created(self.spec, key, values)

    def _record(self, key: tuple[Any, ...], found: tuple[Any, ...], at: int) -> None:
        """The events of a write that returned (version, new?, ..., row from ``at``)."""
        if self._events is None or self._in_statement:
            return
        width = len(self.spec.columns) + 2  # the row as written, then the row before (nulls: none)
        stored = self._sql.stored(found[at : at + width])
        before = found[at + width : at + 2 * width]
        prev = None if before[-2] is None else self._sql.stored(before).values
        if not found[2] and stored.version == 1:  # over an expired row: swept first
            self._events.append(delete_event(self.spec, key, prev, OP_EXPIRE))
            prev = None
        elif found[2]:
            prev = None
        self._events.append(
            put_event(self.spec, key, stored.values, stored.version, stored.expires, prev, prev is None)
        )

    def _merge(
        self, key: tuple[Any, ...], row: dict[str, Any], changed: tuple[str, ...], ttl: int | None, when: str | None
    ) -> tuple[Any, ...] | None:
        w = self._writes
        params = w.row_params(self._params(key, ttl), row)
        found = self._statement(w.merge(changed, self._events is not None, when, self._in_statement), params)
        if found is not None:
            self._record(key, found, 3)
        return found

    def upsert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """See :meth:`TableBase.upsert` (one ``INSERT … ON CONFLICT``)."""
        values = validate_row(self.spec, row)
        key = key_of(self.spec, values)
        found = self._merge(key, full_row(self.spec, values), tuple(values), self._lifetime(ttl), None)
        if found is None:  # the spec changed
            return super().upsert(row, ttl=ttl)
        return int(found[1])

    def insert(self, row: Mapping[str, Any], *, ttl: int | float | None = None) -> int:
        """See :meth:`TableBase.insert` (one ``INSERT … ON CONFLICT``: an expired row is
        replaced, a live one stops it)."""
        values = validate_row(self.spec, row)
        key = key_of(self.spec, values)
        found = self._merge(key, full_row(self.spec, values), self.spec.columns, self._lifetime(ttl), "false")
        if found is None:
            raise self._exists_error(key)
        return int(found[1])

    def _update(
        self,
        key: tuple[Any, ...],
        values: dict[str, Any],
        ttl: int | None,
        version: int | None,
        expected: tuple[str, Any] | None = None,
    ) -> tuple[Any, ...] | None:
        """Set ``values`` on the live row with ``key`` (at ``version``; whose column
        ``expected[0]`` holds ``expected[1]``); None when there is no such row."""
        w = self._writes
        params = self._params(key, ttl)
        params.update(zip(map(w.param_of, values), values.values()))
        if version is not None:
            params["kv_version"] = version
        if expected is not None:
            params["kv_x"] = expected[1]
        column = None if expected is None else expected[0]
        text = w.update(
            tuple(values),
            self._events is not None,
            versioned=version is not None,
            expected=column,
            events=self._in_statement,
        )
        found = self._statement(text, params)
        if found is not None:
            self._record(key, found, 3)
        return found

    def replace(self, row: Mapping[str, Any], *, version: int | None = None, ttl: int | float | None = None) -> int:
        """See :meth:`TableBase.replace` (one statement; a failed ``version`` condition
        is explained by the general path)."""
        values = validate_row(self.spec, row)
        key = key_of(self.spec, values)
        lifetime = self._lifetime(ttl)
        whole = full_row(self.spec, values)
        if checked_version(version) is None:
            found = self._merge(key, whole, self.spec.columns, lifetime, None)
        else:
            changed = {c: v for c, v in whole.items() if not self.spec.is_key(c)}
            found = self._update(key, changed, lifetime, version)
        if found is None:
            return super().replace(row, version=version, ttl=ttl)
        return int(found[1])

    def update(
        self,
        key: KeyLike,
        changes: Mapping[str, Any],
        *,
        default: Mapping[str, Any] | None = None,
        version: int | None = None,
        ttl: int | float | None = None,
    ) -> int:
        """See :meth:`TableBase.update` (one statement; a missing row without
        ``default`` or a failed ``version`` is explained by the general path)."""
        k = self._key(key)
        values = validate_changes(self.spec, changes)
        base = None if default is None else validate_changes(self.spec, default, what="default")
        lifetime = self._lifetime(ttl)
        if base is None or checked_version(version) is not None:
            found = self._update(k, values, lifetime, version)
        else:
            found = self._merge(k, self._key_row(k, {**base, **values}), tuple(values), lifetime, None)
        if found is None:
            return super().update(key, changes, default=default, version=version, ttl=ttl)
        return int(found[1])

    def delete(self, key: KeyLike, *, version: int | None = None) -> bool:
        """See :meth:`TableBase.delete` (one ``DELETE … RETURNING``; an expired row is
        swept and counts as absent)."""
        k = self._key(key)
        versioned = checked_version(version) is not None
        w = self._writes
        params = self._params(k, None)
        if versioned:
            params["kv_version"] = version
        found = self._statement(
            w.delete(versioned=versioned, rows=self._events is not None, events=self._in_statement), params
        )
        if found is None:
            return super().delete(key, version=version) if versioned else False
        was_live = bool(found[1])
        if self._events is not None and not self._in_statement:
            prev = self._sql.stored(found[2:]).values
            self._events.append(delete_event(self.spec, k, prev, OP_DELETE if was_live else OP_EXPIRE))
        return was_live

    def increment(self, key: KeyLike, column: str, amount: int | float = 1) -> int | float:
        """See :meth:`TableBase.increment` (one ``INSERT … ON CONFLICT``; bad arguments
        and results out of range are explained by the general path)."""
        spec = self.spec
        ftype = spec.type_of(column) if column in spec.columns else None
        if (
            ftype is None
            or not ftype.impl.incrementable
            or spec.is_key(column)
            or isinstance(amount, bool)
            or not isinstance(amount, (int, float))
        ):
            return super().increment(key, column, amount)
        k = self._key(key)
        w = self._writes
        params = self._params(k, self._lifetime(None))
        impl = ftype.impl
        if not isinstance(impl, IntegerType):  # a double
            if not abs(amount) < DOUBLE_GUARD:  # also NaN, and an int too large for a double
                return super().increment(key, column, amount)
            start = float(amount) + 0.0
        else:
            if not isinstance(amount, int) or not impl.min <= amount <= impl.max:
                return super().increment(key, column, amount)
            start = amount
            params["kv_lo"], params["kv_hi"] = increment_bounds(ftype, amount)
        w.row_params(params, self._key_row(k, {column: start}))
        found = self._statement(w.increment(column, self._events is not None, self._in_statement), params)
        if found is None:
            return super().increment(key, column, amount)
        self._record(k, found, 4)
        value = found[3]
        return int(value) if impl.integer else float(value) + 0.0

    def compare_and_swap(self, key: KeyLike, column: str, expected: Any, new: Any) -> bool:
        """See :meth:`TableBase.compare_and_swap` (one statement)."""
        k = self._key(key)
        if self.spec.is_key(column):
            return super().compare_and_swap(key, column, expected, new)
        checked = validate_changes(self.spec, {column: new})
        want = None if expected is None else validate_value(self.spec.type_of(column), expected, column)
        lifetime = self._lifetime(None)
        if want is None:
            found = self._merge(k, self._key_row(k, checked), (column,), lifetime, self._writes.is_null(column))
        else:
            found = self._update(k, checked, lifetime, None, (column, want))
        if found is None and self._events is not None:
            # An expired row is swept by a failed swap too, and the feed records that.
            return super().compare_and_swap(key, column, expected, new)
        return found is not None

    def _range_conditions(self, range: Range | None, where: Expr | None) -> list[Any]:
        request = self._request(range, where, None, False, None, None)
        return live_rows(self._sql.table, self.spec, request.key_range, request.where)

    def update_range(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        changes: Mapping[str, Any],
    ) -> int:
        """See :meth:`TableBase.update_range` (one ``UPDATE … WHERE``)."""
        values = validate_changes(self.spec, changes)
        lifetime = self._lifetime(None)
        t = self._sql.table
        expires: Any = None
        if lifetime is not None:
            expires = expiry_now(t) + sa.literal(dt.timedelta(microseconds=lifetime), sa.Interval)
        conditions = self._range_conditions(range, where)
        stmt = (
            sa.update(t)
            .where(*conditions)
            .values({**{t.c[c]: v for c, v in values.items()}, t.c[VERSION]: t.c[VERSION] + 1, t.c[EXPIRES]: expires})
        )
        if self._events is None:
            return int(self._tx.execute(stmt).rowcount)
        before = self._sql.stored_many(list(self._tx.execute(sa.select(*t.columns).where(*conditions)).fetchall()))
        olds = {key_of(self.spec, s.values): s.values for s in before}
        written = self._sql.stored_many(list(self._tx.execute(stmt.returning(*t.columns)).fetchall()))
        events = []
        for s in written:
            key = key_of(self.spec, s.values)
            events.append(put_event(self.spec, key, s.values, s.version, s.expires, olds[key], False))
        self._events.extend(sorted(events, key=_event_key))
        return len(events)

    def delete_range(self, range: Range | None = None, *, where: Expr | None = None) -> int:
        """See :meth:`TableBase.delete_range` (one ``DELETE … WHERE``)."""
        t = self._sql.table
        stmt = sa.delete(t).where(*self._range_conditions(range, where))
        if self._events is None:
            return int(self._tx.execute(stmt).rowcount)
        gone = self._sql.stored_many(list(self._tx.execute(stmt.returning(*t.columns)).fetchall()))
        events = [delete_event(self.spec, key_of(self.spec, s.values), s.values) for s in gone]
        self._events.extend(sorted(events, key=_event_key))
        return len(events)


def _event_key(event: Event) -> bytes:
    """The encoded key of an event (events of one statement are recorded in key order,
    as a scan would have met the rows)."""
    return event[2]


__all__ = ["NativeWrites"]
