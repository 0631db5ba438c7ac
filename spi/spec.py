"""Table specs: typed fields, a composite primary key and single-column indexes."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spi.errors import FrozenTableError, IncompatibleSchemaError, InvalidFieldError, KvError, SchemaError
from spi.frozen import fence
from spi.suggest import did_you_mean
from spi.types import FieldType, checker, describe

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_NAME_LENGTH = 63
STAGING_PREFIX = "kv_stage_"
"""How the names of kvctl's hidden staging tables start (see :mod:`spi.staging`): a
:class:`TableSpec` may carry such a name, while ``admin.create`` refuses it."""
APPLIED_TABLE = "kv_applied"
"""The hidden table of applied change-feed positions (:mod:`spi.applied`): a
:class:`TableSpec` and ``admin.create`` take this one reserved name."""


def validate_name(name: Any, what: str, *, staging: bool = False, internal: bool = False) -> str:
    """Check a table or column name against the contract's identifier rules
    (``staging``: a staging table's name is allowed too; ``internal``: :data:`APPLIED_TABLE`)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise SchemaError(f"{what} name {name!r} is invalid: use letters, digits and _, not starting with a digit")
    if len(name) > MAX_NAME_LENGTH:
        raise SchemaError(f"{what} name {name!r} is longer than {MAX_NAME_LENGTH} characters")
    allowed = (staging and name.startswith(STAGING_PREFIX)) or (internal and name == APPLIED_TABLE)
    if name.lower().startswith("kv_") and not allowed:
        raise SchemaError(f"{what} name {name!r} is reserved: names starting with 'kv_' belong to kvctl")
    return name


def parse_type(value: Any, column: str) -> FieldType:
    """Turn a type name (or :class:`FieldType`) into a :class:`FieldType`."""
    try:
        return FieldType(value)
    except ValueError:
        names = ", ".join(t.value for t in FieldType)
        raise SchemaError(f"column {column!r} has unknown type {value!r}; use one of {names}") from None


@dataclass(frozen=True)
class Field:
    """One typed column of a table."""

    name: str
    type: FieldType

    def __init__(self, name: str, type: FieldType | str) -> None:
        object.__setattr__(self, "name", validate_name(name, "column"))
        object.__setattr__(self, "type", parse_type(type, name))


class TableSpec:
    """A validated table definition; immutable, JSON round-trippable, comparable.

    Two specs are equal when their name, field name→type mapping, key order, index
    set, ``changes`` flag and ``ttl`` are equal: field declaration order does not matter.
    ``changes=True`` records a change feed of the table (see :mod:`spi.changes`);
    ``ttl`` (seconds, > 0) gives every row written an expiry that long after the
    write. A spec without them compares, fingerprints and serialises exactly as
    before they existed. ``frozen`` is the stored table's state, not part of its
    definition: it is in no comparison, fingerprint or ``to_dict`` (see
    :meth:`with_frozen`).
    """

    __slots__ = (
        "_by_name",
        "_columns",
        "_fingerprint",
        "_hash",
        "_key_types",
        "_row_check",
        "changes",
        "fields",
        "frozen",
        "indexes",
        "key_validators",
        "name",
        "primary_key",
        "ttl",
        "validators",
    )

    name: str
    fields: tuple[Field, ...]
    primary_key: tuple[str, ...]
    indexes: tuple[str, ...]
    changes: bool
    """True when the table records a change feed."""
    ttl: int | float | None
    """Seconds after each write that a row expires (None: rows never expire by default)."""
    frozen: bool
    """True when the table refuses every row write (``admin.freeze``); a spec read
    from a provider says so, one built by hand never is."""
    _by_name: dict[str, Field]
    _columns: tuple[str, ...]
    _fingerprint: str
    _hash: int
    _key_types: tuple[FieldType, ...]
    _row_check: Callable[[dict[str, Any]], dict[str, Any]] | None
    validators: dict[str, Callable[[Any], Any]]
    """Per column: its value check for rows (see :func:`spi.types.checker`)."""
    key_validators: tuple[Callable[[Any], Any], ...]
    """The value checks of the key columns, in key order, for keys (null refused)."""

    def __init__(
        self,
        name: str,
        fields: Iterable[Field | tuple[str, str] | Mapping[str, Any]],
        primary_key: Sequence[str],
        indexes: Iterable[str] = (),
        *,
        changes: bool = False,
        ttl: int | float | None = None,
    ) -> None:
        validate_name(name, "table", staging=True, internal=True)
        if not isinstance(changes, bool):
            raise SchemaError(f"changes of {name!r} must be true or false, got {changes!r}")
        if ttl is not None:
            ttl = check_ttl(ttl, SchemaError, f"ttl of {name!r}")
        parsed = tuple(_as_field(f) for f in fields)
        if not parsed:
            raise SchemaError(f"table {name!r} needs at least one field")
        by_name: dict[str, Field] = {}
        for f in parsed:
            if f.name in by_name:
                raise SchemaError(f"table {name!r} declares column {f.name!r} twice")
            by_name[f.name] = f
        if isinstance(primary_key, str):
            raise SchemaError("primary_key must be a list of column names, not a string")
        key = tuple(primary_key)
        if not key:
            raise SchemaError(f"table {name!r} needs at least one primary key column")
        for k in key:
            if k not in by_name:
                raise SchemaError(f"primary key column {k!r} is not a declared field of {name!r}")
        if len(set(key)) != len(key):
            raise SchemaError(f"primary key of {name!r} names a column twice")
        if isinstance(indexes, str):
            raise SchemaError("indexes must be a list of column names, not a string")
        idx = tuple(sorted(set(indexes)))
        for i in idx:
            if i not in by_name:
                raise SchemaError(f"index column {i!r} is not a declared field of {name!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fields", parsed)
        object.__setattr__(self, "primary_key", key)
        object.__setattr__(self, "indexes", idx)
        object.__setattr__(self, "changes", changes)
        object.__setattr__(self, "ttl", ttl)
        object.__setattr__(self, "frozen", False)
        object.__setattr__(self, "_by_name", by_name)
        # Precomputed because every row written or read consults them.
        object.__setattr__(self, "_columns", tuple(f.name for f in parsed))
        object.__setattr__(self, "_key_types", tuple(by_name[k].type for k in key))
        object.__setattr__(
            self,
            "validators",
            {f.name: checker(f.type, f.name, in_key=f.name in key, indexed=f.name in idx) for f in parsed},
        )
        object.__setattr__(self, "key_validators", tuple(checker(by_name[k].type, k, in_key=True) for k in key))
        object.__setattr__(self, "_hash", hash(self._identity()))  # specs key caches: hash once
        # The generated whole-row validator, built by spi.validate on first use.
        object.__setattr__(self, "_row_check", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("TableSpec is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its definition: the precomputed checks are closures.
        if self.changes or self.ttl is not None or self.frozen:
            return (
                _spec_with_options,
                (self.name, self.fields, self.primary_key, self.indexes, self.changes, self.ttl, self.frozen),
            )
        return (TableSpec, (self.name, self.fields, self.primary_key, self.indexes))

    def with_changes(self, changes: bool) -> TableSpec:
        """This spec with the change feed turned on or off."""
        if changes == self.changes:
            return self
        return TableSpec(self.name, self.fields, self.primary_key, self.indexes, changes=changes, ttl=self.ttl)

    def with_ttl(self, ttl: int | float | None) -> TableSpec:
        """This spec with row expiry ``ttl`` seconds after each write (None: none)."""
        if ttl == self.ttl and type(ttl) is type(self.ttl):
            return self
        return TableSpec(self.name, self.fields, self.primary_key, self.indexes, changes=self.changes, ttl=ttl)

    def with_frozen(self, frozen: bool) -> TableSpec:
        """This spec of a table that is frozen (refuses row writes) or not; equal to
        this one either way."""
        if frozen == self.frozen:
            return self
        copy = object.__new__(TableSpec)
        for slot in TableSpec.__slots__:
            if hasattr(self, slot):
                object.__setattr__(copy, slot, getattr(self, slot))
        object.__setattr__(copy, "frozen", bool(frozen))
        return copy

    def fenced(self, table: Any) -> TableSpec:
        """This spec, after making ``table`` (a table object of it) refuse every row
        write when the table is frozen (:func:`spi.frozen.fence`)."""
        if self.frozen:
            fence(table, self.name)
        return self

    def check_writable(self) -> None:
        """Raise :class:`FrozenTableError` when the table is frozen (every row write
        asks before it writes)."""
        if self.frozen:
            raise FrozenTableError(self.name)

    # -- lookups -------------------------------------------------------------
    @property
    def columns(self) -> tuple[str, ...]:
        """Column names in declaration order."""
        return self._columns

    def has_column(self, name: str) -> bool:
        """True if ``name`` is a declared column."""
        return name in self._by_name

    def type_of(self, column: str) -> FieldType:
        """The type of a column; :class:`InvalidFieldError` for an unknown one."""
        try:
            return self._by_name[column].type
        except KeyError:
            raise InvalidFieldError(
                f"table {self.name!r} has no column {column!r} (columns: {', '.join(self.columns)})"
                + did_you_mean(column, self.columns),
                column=column,
            ) from None

    def is_key(self, column: str) -> bool:
        """True if ``column`` is part of the primary key."""
        return column in self.primary_key

    def is_indexed(self, column: str) -> bool:
        """True if ``column`` has a secondary index."""
        return column in self.indexes

    @property
    def key_types(self) -> tuple[FieldType, ...]:
        """Types of the key columns, in key order."""
        return self._key_types

    # -- equality and serialisation ---------------------------------------------
    def _identity(self) -> tuple[Any, ...]:
        return (
            (
                self.name,
                frozenset((f.name, f.type) for f in self.fields),
                self.primary_key,
                frozenset(self.indexes),
            )
            + (("changes",) if self.changes else ())
            + (("ttl", self.ttl) if self.ttl is not None else ())
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TableSpec):
            return NotImplemented
        return self is other or (self._hash == other._hash and self._identity() == other._identity())

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}:{f.type}" for f in self.fields)
        extra = (
            (", changes=True" if self.changes else "")
            + (f", ttl={self.ttl!r}" if self.ttl is not None else "")
            + (", frozen" if self.frozen else "")
        )
        return (
            f"TableSpec({self.name!r}, [{fields}], primary_key={list(self.primary_key)}, "
            f"indexes={list(self.indexes)}{extra})"
        )

    def renamed(self, name: str) -> TableSpec:
        """The same fields, key, indexes and ttl under the table name ``name`` (no
        change feed: what a staging table of this one holds)."""
        return TableSpec(name, self.fields, self.primary_key, self.indexes, ttl=self.ttl)

    def to_dict(self) -> dict[str, Any]:
        """The spec as the CLI's ``--spec`` JSON object."""
        out: dict[str, Any] = {
            "name": self.name,
            "fields": [{"name": f.name, "type": f.type.value} for f in self.fields],
            "primary_key": list(self.primary_key),
            "indexes": list(self.indexes),
        }
        if self.changes:
            out["changes"] = True
        if self.ttl is not None:
            out["ttl"] = self.ttl
        return out

    def to_catalog(self) -> dict[str, Any]:
        """What a provider's catalog stores: :meth:`to_dict` and, for a frozen table,
        ``"frozen": true`` (read back with :meth:`from_catalog`)."""
        out = self.to_dict()
        if self.frozen:
            out["frozen"] = True
        return out

    @classmethod
    def from_catalog(cls, data: Mapping[str, Any]) -> TableSpec:
        """The spec a provider's catalog stored with :meth:`to_catalog`."""
        return cls.from_dict(data).with_frozen(data.get("frozen") is True)

    def to_json(self) -> str:
        """The spec in the format of the CLI's ``--spec`` files."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any, *, name: str | None = None) -> TableSpec:
        """Build a spec from a ``--spec`` object; ``name`` fills in or must match. A
        ``"frozen"`` flag (``kvctl table describe -o json`` of a frozen table) is
        accepted and ignored: frozen is a table's state, not its definition."""
        if not isinstance(data, Mapping):
            raise SchemaError("a table spec must be an object with fields and primary_key")
        unknown = set(data) - {"name", "fields", "primary_key", "indexes", "changes", "ttl", "frozen"}
        if unknown:
            raise SchemaError(f"table spec has unknown keys: {', '.join(sorted(map(str, unknown)))}")
        given = data.get("name")
        if name is not None and given is not None and given != name:
            raise SchemaError(f"spec name {given!r} does not match table name {name!r}")
        table = name if name is not None else given
        if table is None:
            raise SchemaError("table spec has no name")
        fields = data.get("fields")
        if not isinstance(fields, list):
            raise SchemaError("table spec 'fields' must be a list of {name, type} objects")
        pk = data.get("primary_key")
        if not isinstance(pk, list):
            raise SchemaError("table spec 'primary_key' must be a list of column names")
        indexes = data.get("indexes", [])
        if not isinstance(indexes, list):
            raise SchemaError("table spec 'indexes' must be a list of column names")
        changes = data.get("changes", False)
        if not isinstance(changes, bool):
            raise SchemaError(f"table spec 'changes' must be true or false, got {json.dumps(changes, default=str)}")
        ttl = data.get("ttl")
        if ttl is not None:
            ttl = check_ttl(ttl, SchemaError, "table spec 'ttl'")
        if not isinstance(data.get("frozen", False), bool):
            raise SchemaError(
                f"table spec 'frozen' must be true or false, got {json.dumps(data['frozen'], default=str)}"
            )
        return cls(table, fields, pk, indexes, changes=changes, ttl=ttl)

    @classmethod
    def from_json(cls, text: str) -> TableSpec:
        """Parse a spec from JSON text (the inverse of :meth:`to_json`)."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError, RecursionError) as exc:
            raise SchemaError(f"table spec is not valid JSON: {exc}") from None
        return cls.from_dict(data)

    def fingerprint(self) -> str:
        """A short stable digest of the spec, used to bind scan tokens to it."""
        try:
            return self._fingerprint  # made once: a spec never changes, and each page of a scan asks twice
        except AttributeError:
            pass
        import hashlib

        parts: list[Any] = [
            self.name,
            sorted((f.name, f.type.value) for f in self.fields),
            self.primary_key,
            self.indexes,
        ]
        if self.changes:
            parts.append("changes")
        if self.ttl is not None:
            parts.append(["ttl", self.ttl])
        canonical = json.dumps(parts)
        digest = hashlib.sha256(canonical.encode()).hexdigest()[:16]
        object.__setattr__(self, "_fingerprint", digest)
        return digest


def _spec_with_options(
    name: str,
    fields: tuple[Field, ...],
    primary_key: tuple[str, ...],
    indexes: tuple[str, ...],
    changes: bool,
    ttl: int | float | None,
    frozen: bool = False,
) -> TableSpec:
    """Unpickle a spec with a change feed, a ttl or frozen (pickle passes no keyword arguments)."""
    return TableSpec(name, fields, primary_key, indexes, changes=changes, ttl=ttl).with_frozen(frozen)


MAX_TTL = 100 * 365 * 86400
"""The longest ``ttl``, in seconds: 100 years (36500 days), so an expiry is always a
timestamp every provider stores and every clock wait takes."""


def check_ttl(ttl: Any, error: type[KvError], what: str = "ttl") -> int | float:
    """``ttl`` if it is a positive number of seconds up to :data:`MAX_TTL`, else
    ``error`` saying so."""
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise error(f"{what} must be a positive number of seconds, got {json.dumps(ttl, default=str)}")
    if ttl > MAX_TTL:
        raise error(f"{what} must be at most {MAX_TTL} seconds (100 years), got {describe(ttl)}")
    return ttl


def _as_field(value: Field | tuple[str, str] | Mapping[str, Any]) -> Field:
    if isinstance(value, Field):
        return value
    if isinstance(value, Mapping):
        if set(value) != {"name", "type"}:
            raise SchemaError(
                f"a field must be an object with exactly name and type, got {json.dumps(dict(value), default=str)}"
            )
        return Field(value["name"], value["type"])
    if isinstance(value, tuple) and len(value) == 2:
        return Field(value[0], value[1])
    raise SchemaError(f"cannot read a field from {value!r}")


@dataclass(frozen=True)
class SchemaChange:
    """What ``create_or_update`` must do to go from one spec to another."""

    added_fields: tuple[Field, ...]
    widened: tuple[Field, ...]
    added_indexes: tuple[str, ...]
    dropped_indexes: tuple[str, ...]
    changes: bool | None = None
    """The new ``changes`` flag when it is turned on or off, else None."""
    ttl_changed: bool = False
    """True when the table's ``ttl`` changes (rows already written keep their expiry)."""

    @property
    def empty(self) -> bool:
        """True when the specs are equal."""
        return not (
            self.added_fields
            or self.widened
            or self.added_indexes
            or self.dropped_indexes
            or self.changes is not None
            or self.ttl_changed
        )


def plan_schema_change(old: TableSpec, new: TableSpec) -> SchemaChange:
    """Work out a compatible change, or raise :class:`IncompatibleSchemaError`."""
    if old.name != new.name:
        raise IncompatibleSchemaError(f"cannot rename table {old.name!r} to {new.name!r}")
    if old.primary_key != new.primary_key:
        raise IncompatibleSchemaError(
            f"cannot change the primary key of {old.name!r} from ({', '.join(old.primary_key)}) to ({', '.join(new.primary_key)})"
        )
    removed = [c for c in old.columns if not new.has_column(c)]
    if removed:
        raise IncompatibleSchemaError(f"cannot remove column(s) {', '.join(removed)} from {old.name!r}")
    widened = []
    for f in old.fields:
        new_type = new.type_of(f.name)
        if new_type == f.type:
            continue
        if f.type.impl.widens_to == new_type and not old.is_key(f.name):
            widened.append(Field(f.name, new_type))
        else:
            raise IncompatibleSchemaError(
                f"cannot change column {f.name!r} of {old.name!r} from {f.type} to {new_type}"
                + (" (key columns cannot change type)" if old.is_key(f.name) else "")
            )
    return SchemaChange(
        added_fields=tuple(f for f in new.fields if not old.has_column(f.name)),
        widened=tuple(widened),
        added_indexes=tuple(i for i in new.indexes if i not in old.indexes),
        dropped_indexes=tuple(i for i in old.indexes if i not in new.indexes),
        changes=None if old.changes == new.changes else new.changes,
        ttl_changed=old.ttl != new.ttl,
    )
