"""Single-key writes as single statements: the SQL text of each, built once per spec.

Every statement writes only while the catalog holds the spec it was built from (its
fingerprint). Statements whose "matched nothing" is a normal answer (an insert over a
live row, a failed swap, a delete of a missing row) are *checked*: a CTE reads the
catalog row and the result is led by its fingerprint, so the caller tells a changed
spec from a failed condition (no row at all when the table left the catalog; the
fingerprint and nulls when the write matched nothing)::

    WITH kv_c AS (SELECT fingerprint FROM catalog WHERE name = %(kv_name)s),
         kv_w AS (<INSERT/UPDATE/DELETE ... AND (SELECT fingerprint FROM kv_c) = %(kv_fp)s
                   RETURNING ...>)
    SELECT kv_c.fingerprint, kv_w.* FROM kv_c LEFT JOIN kv_w ON true

The others (an upsert always writes; a failed ``version=`` condition is an error to
explain anyway) are *lean*: the write itself with ``EXISTS (SELECT FROM catalog WHERE
name = … AND fingerprint = …)`` in its condition, led by ``true``; no row means "ask
the general path". Either way an auto-commit write is one round trip that also
notices a spec changed by another process. The version and expiry rules are SQL: a
row whose ``kv_expires`` has passed (on the server's clock, ``statement_timestamp()``,
or a provider's test clock: the parameter ``kv_now``) counts as absent, so a write that
meets it starts again at version 1 from the written values alone.

A write on a change-fed table returns the whole row as written and, last, the row as
it was stored before the statement (a CTE ``kv_o`` of the same snapshot; nulls where
there was none): the event's ``prev`` costs no round trip.

Parameters are named: ``kv_name``, ``kv_fp``, ``kv_ttl`` (the row's lifetime in
microseconds, null: never expires), ``kv_version`` (a ``version=`` condition),
``kv_k{i}`` (key values), ``kv_v{i}`` (column ``i`` of the spec, in declaration
order), ``kv_x`` (a compare-and-swap's expected value), ``kv_lo``/``kv_hi`` (an
increment's range guard), ``kv_now`` (now on a test clock, :mod:`spi.clock`; only in
the statements of a provider given one).
"""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy.engine import Dialect

from providers.postgres.event_sql import EventSql
from providers.postgres.schema import CATALOG, EXPIRES, VERSION, qualified, type_name
from spi.clock import Clock, now_micros
from spi.codec import from_micros
from spi.spec import TableSpec
from spi.types import FieldType

SERVER_NOW = "statement_timestamp()"
"""Now on the clock of expiry: the server's."""
CLOCK_NOW = "%(kv_now)s::timestamptz"
"""Now on the clock of expiry when the provider has a test clock (:mod:`spi.clock`)."""


def live_sql(now: str) -> str:
    """The condition that the stored row has not expired by ``now``."""
    return f"(kv_t.{EXPIRES} IS NULL OR kv_t.{EXPIRES} > {now})"


def expiry_sql(now: str) -> str:
    """The expiry of a row written at ``now`` (null when ``kv_ttl`` is null)."""
    return f"{now} + %(kv_ttl)s::int8 * interval '1 microsecond'"


DOUBLE_GUARD = 8.98846567431158e307
"""Half the largest double: two numbers below it in magnitude add without overflow
(PostgreSQL raises on overflow where Python gives infinity; such increments take the
general path)."""


class WriteStatement(NamedTuple):
    """A statement's SQL and whether its result is led by the catalog's fingerprint
    (checked), else by ``true`` (lean: no row when it wrote nothing, whatever the reason)."""

    text: str
    checked: bool


class WriteSql:
    """The single-statement writes of one spec on one schema (with a test ``clock``:
    deciding expiry on it, see :mod:`spi.clock`)."""

    def __init__(self, spec: TableSpec, schema: str, dialect: Dialect, clock: Clock | None = None) -> None:
        self.spec = spec
        self.fingerprint = spec.fingerprint()
        self._clock = clock
        now = SERVER_NOW if clock is None else CLOCK_NOW
        self._live, self._expiry = live_sql(now), expiry_sql(now)
        quote = dialect.identifier_preparer.quote_identifier
        self._table = qualified(dialect, schema, spec.name)
        self._catalog = qualified(dialect, schema, CATALOG)
        self._names = {c: quote(c) for c in spec.columns}
        self._keys = [self._names[k] for k in spec.primary_key]
        self._params = {c: f"kv_v{i}" for i, c in enumerate(spec.columns)}
        self._key_match = " AND ".join(
            f"kv_t.{n} = %(kv_k{i})s::{self._cast(k)}" for i, (k, n) in enumerate(zip(spec.primary_key, self._keys))
        )
        everything = ", ".join(f"kv_t.{self._names[c]} AS kv_c{i}" for i, c in enumerate(spec.columns))
        self._row = f"{everything}, kv_t.{VERSION} AS kv_cv, kv_t.{EXPIRES} AS kv_ce"
        self._cache: dict[Any, WriteStatement] = {}
        self._events = EventSql(spec, schema, dialect) if spec.changes else None

    def _cast(self, column: str) -> str:
        return type_name(self.spec.type_of(column))

    def _value(self, column: str) -> str:
        return f"%({self._params[column]})s::{self._cast(column)}"

    def _frame(self, write: str, checked: bool, old: bool = False, events: str = "") -> WriteStatement:
        """The statement around ``write``; ``old``: its result ends with the row as it
        was stored before (nulls where there was none; a change feed's ``prev``);
        ``events``: the CTEs that record the write's change events (:mod:`event_sql`)."""
        if not (checked or old or events):
            return WriteStatement(write, False)
        ctes = [f"kv_c AS (SELECT fingerprint FROM {self._catalog} WHERE name = %(kv_name)s)"] if checked else []
        if old:
            ctes.append(f"kv_o AS (SELECT {self._row} FROM {self._table} AS kv_t WHERE {self._key_match})")
        ctes.append(f"kv_w AS ({write})")
        if events:
            ctes.append(events)
        rows, before = f"kv_w.*{', kv_o.*' if old else ''}", " LEFT JOIN kv_o ON true" if old else ""
        if checked:
            select = f"SELECT kv_c.fingerprint, {rows} FROM kv_c LEFT JOIN kv_w ON true{before}"
        else:
            select = f"SELECT {rows} FROM kv_w{before}"
        return WriteStatement(f"WITH {', '.join(ctes)} {select}", checked)

    def _put_events(self, events: bool) -> str:
        """The event CTEs of a put (see :meth:`EventSql.puts`), or nothing."""
        if not events:
            return ""
        assert self._events is not None
        n = len(self.spec.columns)
        new, old = [f"kv_w.kv_c{i}" for i in range(n)], [f"kv_o.kv_c{i}" for i in range(n)]
        return self._events.puts(new, "kv_w.kv_cv", "kv_w.kv_ce", "kv_w.kv_new", old)

    def _spec_holds(self, checked: bool) -> str:
        """The condition that the catalog still holds the spec."""
        if checked:
            return "(SELECT fingerprint FROM kv_c) = %(kv_fp)s"
        return f"EXISTS (SELECT FROM {self._catalog} WHERE name = %(kv_name)s AND fingerprint = %(kv_fp)s)"

    def _returning(self, first: str, rows: bool, checked: bool) -> str:
        """``RETURNING first`` (after ``true`` when lean) and, for a change feed's events,
        the whole row as written."""
        first = first if checked else f"true, {first}"
        return f" RETURNING {first}, {self._row}" if rows else f" RETURNING {first}"

    def _upsert(self, setting: dict[str, str], when: str | None, checked: bool, rows: bool, extra: str = "") -> str:
        """``INSERT`` a full row (``kv_v*``: every column) ``ON CONFLICT`` setting the
        non-key columns in ``setting`` to their expressions and keeping the rest (over
        an expired row: the inserted values), with the version and expiry rules;
        ``when``: a condition on the stored live row. Returns the version, whether the
        row is new (not over an expired one), ``extra``, [the row]."""
        spec, names = self.spec, self._names
        sets = [
            f"{names[c]} = {setting.get(c) or f'CASE WHEN {self._live} THEN kv_t.{names[c]} ELSE EXCLUDED.{names[c]} END'}"
            for c in spec.columns
            if not spec.is_key(c)
        ]
        sets.append(f"{VERSION} = CASE WHEN {self._live} THEN kv_t.{VERSION} + 1 ELSE 1 END")
        sets.append(f"{EXPIRES} = EXCLUDED.{EXPIRES}")
        return (
            f"INSERT INTO {self._table} AS kv_t ({', '.join(names[c] for c in spec.columns)}, {VERSION}, {EXPIRES})"
            f" SELECT {', '.join(self._value(c) for c in spec.columns)}, 1, {self._expiry}"
            f" WHERE {self._spec_holds(checked)} ON CONFLICT ({', '.join(self._keys)})"
            f" DO UPDATE SET {', '.join(sets)}{'' if when is None else f' WHERE NOT {self._live} OR ({when})'}"
            + self._returning(f"kv_t.{VERSION}, kv_t.xmax = 0 AS kv_new{extra}", rows, checked)
        )

    def merge(
        self, changed: Collection[str], rows: bool, when: str | None = None, events: bool = False
    ) -> WriteStatement:
        """Insert a full row, or on a live row set only the ``changed`` columns (see
        :meth:`_upsert`); ``when``: a further condition on the stored live row (the
        write does nothing when it fails; checked, else lean). Returns the version,
        whether the row was new, [the row]; ``events``: the statement records the
        write's change events itself (``rows`` too; parameter ``kv_key``)."""
        cache_key = ("merge", changed, rows, when, events)
        statement = self._cache.get(cache_key)
        if statement is None:
            setting = {c: f"EXCLUDED.{self._names[c]}" for c in changed}
            checked = when is not None
            write = self._upsert(setting, when, checked, rows)
            statement = self._cache[cache_key] = self._frame(write, checked, rows, self._put_events(events))
        return statement

    def increment(self, column: str, rows: bool, events: bool = False) -> WriteStatement:
        """Add the amount (``column``'s ``kv_v*``) to ``column`` of the live row (null
        counts as 0) when its value is within ``kv_lo``..``kv_hi`` (doubles: below
        :data:`DOUBLE_GUARD` in magnitude), else insert the row with ``kv_v*`` (lean).
        Returns the version, whether new, the new value, [the row]."""
        cache_key = ("increment", column, rows, events)
        statement = self._cache.get(cache_key)
        if statement is None:
            name = self._names[column]
            current = f"COALESCE(kv_t.{name}, 0)"
            if self.spec.type_of(column) is FieldType.DOUBLE:
                guard = f"abs({current}) < {DOUBLE_GUARD!r}"
            else:
                guard = f"{current} BETWEEN %(kv_lo)s::numeric AND %(kv_hi)s::numeric"
            added = f"CASE WHEN {self._live} THEN {current} + EXCLUDED.{name} ELSE EXCLUDED.{name} END"
            write = self._upsert({column: added}, guard, False, rows, f", kv_t.{name}")
            statement = self._cache[cache_key] = self._frame(write, False, rows, self._put_events(events))
        return statement

    def update(
        self,
        changed: tuple[str, ...],
        rows: bool,
        *,
        versioned: bool,
        expected: str | None = None,
        events: bool = False,
    ) -> WriteStatement:
        """Set the ``changed`` columns of the live row (``versioned``: at version
        ``kv_version``; ``expected``: whose column holds ``kv_x``, checked; else lean).
        Returns the version, false, [the row]; nothing when no such row."""
        cache_key = ("update", changed, rows, versioned, expected, events)
        text = self._cache.get(cache_key)
        if text is None:
            names = self._names
            sets = [f"{names[c]} = {self._value(c)}" for c in changed]
            sets.append(f"{VERSION} = kv_t.{VERSION} + 1")
            sets.append(f"{EXPIRES} = {self._expiry}")
            checked = expected is not None
            conditions = [self._key_match, self._live, self._spec_holds(checked)]
            if versioned:
                conditions.append(f"kv_t.{VERSION} = %(kv_version)s::int8")
            if expected is not None:
                conditions.append(f"kv_t.{names[expected]} = %(kv_x)s::{self._cast(expected)}")
            write = f"UPDATE {self._table} AS kv_t SET {', '.join(sets)} WHERE {' AND '.join(conditions)}"
            write += self._returning(f"kv_t.{VERSION}, false AS kv_new", rows, checked)
            text = self._cache[cache_key] = self._frame(write, checked, rows, self._put_events(events))
        return text

    def delete(self, *, versioned: bool, rows: bool = False, events: bool = False) -> WriteStatement:
        """Delete the row (``versioned``: only a live one at version ``kv_version``,
        lean; else checked). Returns whether it was live, [the row deleted]; nothing
        when there was none."""
        cache_key = ("delete", versioned, rows, events)
        text = self._cache.get(cache_key)
        if text is None:
            conditions = [self._key_match, self._spec_holds(not versioned)]
            if versioned:
                conditions += [self._live, f"kv_t.{VERSION} = %(kv_version)s::int8"]
            write = f"DELETE FROM {self._table} AS kv_t WHERE {' AND '.join(conditions)}"
            write += (
                f" RETURNING {self._live} AS kv_live" if not versioned else f" RETURNING true, {self._live} AS kv_live"
            )
            write += f", {self._row}" if rows else ""
            recorded = ""
            if events:
                assert self._events is not None
                recorded = self._events.delete([f"kv_w.kv_c{i}" for i in range(len(self.spec.columns))], "kv_w.kv_live")
            text = self._cache[cache_key] = self._frame(write, not versioned, events=recorded)
        return text

    def param_of(self, column: str) -> str:
        """The parameter that carries ``column``'s value."""
        return self._params[column]

    def is_null(self, column: str) -> str:
        """The condition that the stored row's ``column`` is null (for :meth:`merge`)."""
        return f"kv_t.{self._names[column]} IS NULL"

    def params(self, name: str, key: tuple[Any, ...], ttl: int | None) -> dict[str, Any]:
        """The parameters every statement takes."""
        params: dict[str, Any] = {"kv_name": name, "kv_fp": self.fingerprint, "kv_ttl": ttl}
        for i, value in enumerate(key):
            params[f"kv_k{i}"] = value
        if self._clock is not None:
            params["kv_now"] = from_micros(now_micros(self._clock))
        return params

    def row_params(self, params: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
        """``params`` with every column's value (``values`` is a full row)."""
        names = self._params
        for column, value in values.items():
            params[names[column]] = value
        return params


@lru_cache(maxsize=64)
def write_sql(spec: TableSpec, schema: str, dialect: Dialect, clock: Clock | None = None) -> WriteSql:
    """The (cached) single-statement writes of ``spec`` in ``schema`` (expiry on the
    test ``clock``, when given)."""
    return WriteSql(spec, schema, dialect, clock)


__all__ = ["WriteSql", "WriteStatement", "write_sql"]
