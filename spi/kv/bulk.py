"""Bulk-load batches for the ordered-store layout, validated and encoded a batch at a time.

Per-value Python code is what makes a pure-Python load slow, so a batch is
validated by msgspec, which converts a whole list of dicts into typed structs in
C, and its keys, stored values and index entries are then built column by column.
msgspec's checks are chosen to accept exactly what :mod:`spi.types` accepts, or
less: integers by range (never a bool or a float), bools, and strings checked
afterwards for NUL, lone surrogates and byte length. Other types are left to the
column's own checker. When anything in a batch does not pass (a partial row, a bad
value, an exotic type), the whole batch goes through :func:`spi.validate.validate_row`
row by row, which accepts what is valid and reports the first bad row exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice, repeat
from operator import attrgetter, lt
from typing import Any

import msgspec

from spi.codec import column_encoder, key_column_encoder, key_encoder, nullable_encoder, to_micros
from spi.errors import KvError
from spi.keys import key_of
from spi.load import LoadPreparer
from spi.spec import TableSpec
from spi.types import FieldType, size_limit
from spi.validate import validate_row
from spi.validated import ColumnFeed, ColumnRows

_SIGN = 1 << 63


class RowBatch:
    """A prepared batch. Either encoded (``stored`` set: every row complete, with its
    stored key, stored value at version 1, index entries and validated values by
    column) or only validated (``rows`` set: the generic per-row path writes it)."""

    __slots__ = ("columns", "entries", "keys", "names", "ordered", "rows", "signature", "stored", "stored_columns")

    def __init__(
        self,
        keys: list[bytes],
        signature: tuple[Any, ...],
        names: Sequence[str],
        *,
        stored: list[bytes] | None = None,
        columns: list[list[Any]] | None = None,
        stored_columns: list[list[Any]] | None = None,
        entries: list[list[bytes]] | None = None,
        rows: list[dict[str, Any]] | None = None,
        ordered: bool = False,
    ) -> None:
        self.keys = keys
        """The stored key of every row."""
        self.ordered = ordered
        """True when :attr:`keys` are strictly increasing (so also distinct): a load's
        usual input, which the write buffer keeps as a run."""
        self.signature = signature
        """The layout the batch was encoded for."""
        self.names = names
        self.stored = stored
        self.columns = columns
        self.stored_columns = stored_columns
        """The values by column as stored (timestamps in microseconds)."""
        self.entries = entries or []
        """Per index, the entry key of every row."""
        self.rows = rows

    def row(self, i: int) -> dict[str, Any]:
        """The validated values of row ``i``."""
        if self.rows is not None:
            return self.rows[i]
        assert self.columns is not None
        return dict(zip(self.names, [c[i] for c in self.columns]))

    def stored_at(self, versions: Iterable[int], expiries: Iterable[int | None]) -> list[bytes]:
        """The stored values of an encoded batch's rows, row ``i`` at ``versions[i]``
        expiring at ``expiries[i]`` (:attr:`stored` has them at version 1, never
        expiring; see :meth:`spi.kv.layout.Layout.encode_row`)."""
        assert self.stored_columns is not None
        heads = (v if e is None else (v, e) for v, e in zip(versions, expiries))
        return list(map(msgspec.msgpack.Encoder().encode, zip(heads, *self.stored_columns)))

    def stored_expiring(self, expires: int) -> list[bytes]:
        """The stored values of an encoded batch's rows at version 1, each expiring at
        ``expires`` (see :meth:`stored_at`)."""
        assert self.stored_columns is not None
        return list(map(msgspec.msgpack.Encoder().encode, zip(repeat((1, expires)), *self.stored_columns)))

    def all_rows(self) -> list[dict[str, Any]]:
        """The validated values of every row."""
        return self.rows if self.rows is not None else [self.row(i) for i in range(len(self.keys))]


class KvLoadPreparer(LoadPreparer):
    """Batches for a table stored as ``row_prefix + key`` → ``msgpack([version,
    *values in columns order])``, with index entries ``prefix + encode_nullable(value)
    + key`` for each ``(column, prefix)`` of ``indexes``. Batches carry ``signature``
    so the writer can check the layout has not changed since. Use from one thread."""

    def __init__(
        self,
        spec: TableSpec,
        columns: Sequence[str],
        row_prefix: bytes,
        indexes: Sequence[tuple[str, bytes]],
        signature: tuple[Any, ...],
    ) -> None:
        super().__init__(spec)
        self._names = tuple(columns)
        self._prefix = row_prefix
        self._signature = signature
        fields = [(f"f{i}", _struct_type(spec, c)) for i, c in enumerate(columns)]
        rename = {f"f{i}": c for i, c in enumerate(columns)}
        # gc=False: the structs hold only plain values, and a batch makes thousands of them.
        self._getters = [attrgetter(name) for name, _ in fields]
        row_type = msgspec.defstruct("Row", fields, forbid_unknown_fields=True, rename=rename, gc=False)
        self._rows_type = list[row_type]  # type: ignore[valid-type]
        self._encode = msgspec.msgpack.Encoder().encode
        types = [spec.type_of(c) for c in columns]
        self._strings = [(i, _string_limit(spec, c)) for i, c in enumerate(columns) if types[i] is FieldType.STRING]
        self._checked = [
            (i, spec.validators[c]) for i, (c, t) in enumerate(zip(columns, types)) if t.impl.bulk_type(0) is Any
        ]
        self._times = [i for i, t in enumerate(types) if t is FieldType.TIMESTAMP]
        self._key_positions = [self._names.index(k) for k in spec.primary_key]
        self._int_key = len(spec.primary_key) == 1 and spec.key_types[0].impl.integer
        self._pack_key = struct.Struct(f">{len(row_prefix)}sQ").pack
        self._encode_key = key_encoder(spec.key_types)
        self._encode_key_columns = key_column_encoder(spec.key_types)
        self._indexes = [
            (
                self._names.index(c),
                prefix,
                spec.type_of(c).impl.integer,
                nullable_encoder(spec.type_of(c)),
                column_encoder(spec.type_of(c)),
            )
            for c, prefix in indexes
        ]

    def take(self, rows: Iterator[Any], n: int, *, held: bool) -> list[Any]:
        """Up to ``n`` rows, copied as they are read unless ``held`` (validated by
        :meth:`prepare`)."""
        if held:
            return list(islice(rows, n))
        return [row.copy() if type(row) is dict else _snapshot(row) for row in islice(rows, n)]

    def take_validated(self, feed: ColumnFeed, n: int) -> Sequence[Any]:
        """Up to ``n`` rows of a :class:`spi.validated.ValidatedRows`, kept as the columns
        they are (:meth:`prepare` encodes them without checking them again)."""
        if self._names != self.spec.columns:
            return super().take_validated(feed, n)
        return ColumnRows(feed.take(n))

    def prepare(self, taken: Sequence[Any]) -> RowBatch:
        """The batch, encoded when every row passes the batch checks (or was validated
        already: :meth:`take_validated`)."""
        if type(taken) is ColumnRows:
            return self._encoded(list(taken.columns))
        columns = self._validated_columns(taken)
        if columns is not None:
            try:
                return self._encoded(columns)
            except UnicodeEncodeError:
                pass  # a lone surrogate the string checks did not see: the exact path reports it
        return self._validated_rows(taken)

    def key_of(self, row: Any) -> tuple[Any, ...]:
        """The key of a taken row (a dict, or a tuple of :meth:`take_validated`)."""
        if type(row) is tuple:
            return tuple(map(row.__getitem__, self._key_positions))
        return key_of(self.spec, row)

    def _validated_columns(self, taken: Sequence[Any]) -> list[list[Any]] | None:
        """The batch's values column by column (layout order), or None when some row
        needs the exact per-row path."""
        try:
            structs = msgspec.convert(taken, self._rows_type)
        except (msgspec.ValidationError, TypeError, ValueError):
            return None
        columns = [list(map(get, structs)) for get in self._getters]  # no tuple per row
        for i, limit in self._strings:
            if not _strings_valid(columns[i], limit):
                return None
        try:
            for i, check in self._checked:
                columns[i] = list(map(check, columns[i]))
        except KvError:
            return None
        return columns

    def _encoded(self, columns: list[list[Any]]) -> RowBatch:
        stored_columns = list(columns)
        for i in self._times:
            stored_columns[i] = [None if v is None else to_micros(v) for v in columns[i]]
        stored = list(map(self._encode, zip(repeat(1), *stored_columns)))
        prefix = self._prefix
        # An integer key is encoded as its value + 2**63 (validated: no mask needed),
        # packed together with the prefix by a map in C.
        shifted = list(map(_SIGN.__add__, columns[self._key_positions[0]])) if self._int_key else []
        suffixes: list[bytes] | None = None  # the keys without the prefix
        if self._int_key:
            keys = list(map(self._pack_key, repeat(prefix), shifted))
            ordered = all(map(lt, shifted, islice(shifted, 1, None)))  # integers compare faster than bytes
        else:
            suffixes = self._encode_key_columns([columns[p] for p in self._key_positions])
            keys = list(map(prefix.__add__, suffixes))
            ordered = all(map(lt, suffixes, islice(suffixes, 1, None)))  # one prefix: the keys' order
        entries = []
        for i, index_prefix, is_int, encode_value, encode_column in self._indexes:
            values = columns[i]
            if is_int and self._int_key and None not in values:  # the common case, all in C
                pack = struct.Struct(f">{len(index_prefix) + 1}sQQ").pack
                entries.append(list(map(pack, repeat(index_prefix + b"\x01"), map(_SIGN.__add__, values), shifted)))
                continue
            if suffixes is None:
                suffixes = [k[len(prefix) :] for k in keys]
            if None in values:
                entries.append([index_prefix + encode_value(v) + k for v, k in zip(values, suffixes)])
            else:  # column by column, in C-level passes
                entries.append(
                    list(map(b"".join, zip(repeat(index_prefix + b"\x01"), encode_column(values), suffixes)))
                )
        return RowBatch(
            keys,
            self._signature,
            self._names,
            stored=stored,
            columns=columns,
            stored_columns=stored_columns,
            entries=entries,
            ordered=ordered,
        )

    def _validated_rows(self, taken: Sequence[Any]) -> RowBatch:
        spec, rows = self.spec, []
        for i, row in enumerate(taken):
            try:
                rows.append(validate_row(spec, row))
            except KvError as exc:
                exc.row_index = i
                raise
        prefix, encode = self._prefix, self._encode_key
        keys = [prefix + encode(key_of(spec, values)) for values in rows]
        return RowBatch(keys, self._signature, self._names, rows=rows)


def _snapshot(row: Any) -> Any:
    """A copy of an input row (not a dict) that later changes to the row cannot reach."""
    return dict(row) if isinstance(row, Mapping) else row


def _string_limit(spec: TableSpec, column: str) -> int:
    return size_limit(spec.is_key(column), spec.is_indexed(column))


def _struct_type(spec: TableSpec, column: str) -> Any:
    """The msgspec type of a column: one that accepts no value :mod:`spi.types` rejects."""
    base = spec.type_of(column).impl.bulk_type(_string_limit(spec, column))
    if base is Any:
        return Any  # checked afterwards by the column's own checker
    return base if spec.is_key(column) else base | None


def _strings_valid(values: list[Any], limit: int) -> bool:
    """True when no string has a NUL or a lone surrogate and each fits in ``limit``
    UTF-8 bytes (msgspec has already bounded their length in characters)."""
    joined = "".join(filter(None, values))
    if "\x00" in joined:
        return False
    if joined.isascii():
        return True  # an ASCII string's length is its UTF-8 size
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return all(len(v) <= limit // 4 or len(v.encode("utf-8")) <= limit for v in values if v)
