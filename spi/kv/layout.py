"""Where an ordered store keeps catalog entries, rows and index entries, and how a
table's rows are encoded.

All keys are byte strings, compared unsigned:

- ``00 'c' name`` → catalog entry (msgpack: spec, table id, stored column layout)
- ``00 'n'`` → the next table id
- ``01 tid(4) 00 key`` → row: msgpack ``[version, value...]`` in layout order, or
  ``[[version, expires], value...]`` for a row that expires (``expires`` in µs since
  the epoch, UTC)
- ``01 tid(4) 01 col(2) nullable-value key`` → empty: index entry of column ``col``
  (its position in the layout); row and index entries change in one atomic commit (an
  index being built, the catalog entry's ``building``, has entries for the rows written
  since it started and those its pieces reached)
- ``01 tid(4) 02 expires(8) key`` → empty: expiry entry of a row that expires (the
  sweep's work list, in expiry order), written and removed with the row
- ``01 tid(4) 03`` → msgpack int: how many rows the table stores (expired ones not
  swept yet included), changed in the commits that add or remove rows; tables made
  before it existed have none (their counts walk the keys)
- ``02 'e' rev(8) page(4)`` → change feed (:mod:`spi.kv.feed`): the events of
  revision ``rev``, up to 1000 a page, column by column: ``time(8) n(4) ops(n)
  key-lengths(4n) row-lengths(4n) row-keys... stored-rows...`` (time in µs since the
  epoch, UTC; lengths little-endian). ``op`` is the position in
  :data:`spi.changes.OPS`; a row key ``01 tid 00 key`` names the table and the key;
  a stored row (a put's; empty for a delete) is the row's value after the write,
  with its version. Written in the same commit as the rows they describe.
- ``02 'o'`` → the revision the feed is compacted through (events up to it are gone)
- ``02 'r'`` → the store's current revision
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter
from textwrap import indent
from typing import Any

import msgspec

from spi.clock import SYSTEM_CLOCK, Clock, now_micros
from spi.codec import encode_key, from_micros, key_encoder, nullable_encoder, prefix_successor, to_micros
from spi.codegen import column_closure, dict_display
from spi.filters import Expr
from spi.keys import ResolvedRange
from spi.kv.bulk import KvLoadPreparer
from spi.kv.rowtypes import StoredRow, row_type
from spi.kv.store import ended_error
from spi.predicate import PredicateBuilder
from spi.primitives import Stored
from spi.row import Row
from spi.spec import TableSpec
from spi.types import FieldType

CATALOG = b"\x00c"
NEXT_ID = b"\x00n"
DATA = b"\x01"
ROWS = b"\x00"
INDEX = b"\x01"
EXPIRY = b"\x02"
COUNT = b"\x03"
EVENTS = b"\x02e"
COMPACTED = b"\x02o"
REVISION = b"\x02r"
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_U64 = struct.Struct(">Q")
_ARRAY32 = struct.Struct(">BI")

pack = msgspec.msgpack.encode
"""msgpack encoding of catalog entries and counters."""
unpack = msgspec.msgpack.decode
"""msgpack decoding of stored rows, catalog entries and counters."""


def catalog_key(name: str) -> bytes:
    """Store key of table ``name``'s catalog entry."""
    return CATALOG + name.encode("utf-8")


_UINT_SIZES = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}
"""msgpack's unsigned integer tags and the bytes of big-endian value that follow each."""


class Layout:
    """How one table's rows are stored: column order and per-type value codecs.

    ``building``: indexes being added in pieces (:mod:`spi.kv.index_build`), not in the
    spec yet: writers keep their entries like any index's, readers never use them."""

    def __init__(self, spec: TableSpec, columns: list[str], table_id: int, building: tuple[str, ...] = ()) -> None:
        self.spec = spec
        self.columns = columns
        self.table_id = table_id
        self.building = building
        self.prefix = DATA + _U32.pack(table_id)
        self.row_prefix = self.prefix + ROWS
        self.expiry_prefix = self.prefix + EXPIRY
        self.count_key = self.prefix + COUNT
        self.key_types = spec.key_types
        self.encode_key = key_encoder(spec.key_types)
        self.timestamps = [c for c in columns if spec.type_of(c) is FieldType.TIMESTAMP]
        kept = (*spec.indexes, *building)
        self.index_ids = {c: columns.index(c) for c in kept}
        self.indexes = [(c, self.index_prefix(c), nullable_encoder(spec.type_of(c))) for c in kept]
        """Every index the writers keep: the spec's and those being built."""
        self._encoders = {c: encoder for c, _, encoder in self.indexes}
        self._get_all = itemgetter(*columns) if len(columns) > 1 else lambda values: (values[columns[0]],)
        build = _dict_builder(len(columns))(*columns)
        self.values_of: Callable[[list[Any]], dict[str, Any]] = (
            build if not self.timestamps else lambda raw: self._from_micros(build(raw))
        )
        """The column values of an unpacked stored row (columns added later read as null)."""
        self.row_type = row_type(tuple(columns), frozenset(self.timestamps))
        """The struct type the readers decode this layout's rows into (:mod:`spi.kv.rowtypes`)."""
        self._plain: Readers = _row_reader(self.row_type)
        self.read_list = self._plain[1]
        """``readers(None)[1]``: the rows of stored values that have not expired, as a list."""
        self._readers: dict[Expr, Readers] = {}
        # A store runs one transaction (one thread) at a time, so a layout may own an encoder.
        self._pack = msgspec.msgpack.Encoder().encode

    def readers(self, where: Expr | None) -> Readers:
        """``(read_rows, read_list, read_all)`` keeping only the rows the bound ``where`` is true for.

        ``read_rows(view, chunks, limit, clock)``: the :class:`Row` of each stored
        value in the lists ``chunks`` (:meth:`~spi.kv.store.StoreSession.value_chunks`;
        at most ``limit``) that has not expired on ``clock`` (:mod:`spi.clock`, read
        once, as the scan starts), raising when ``view.ended`` (before each row and
        before the next chunk is fetched). ``read_list(chunks, limit, clock)``: the
        same rows as one list built in one call, for a caller that takes every row
        while its view is open (a page, a one-off read; the clock is read at the
        first row that expires, so a point read of a row without expiry reads none).
        ``read_all(chunks, clock)``: every row of ``read_rows``, for values read
        already (nothing to check between rows). ``positions(chunk, now)``: where in
        the list of stored values ``chunk`` the rows of ``read_rows`` are (not expired
        at ``now``, in microseconds), no row built (a range delete's)."""
        if where is None:
            return self._plain
        readers = self._readers.get(where)
        if readers is None:
            if len(self._readers) >= 64:
                self._readers.clear()
            readers = self._readers[where] = _filtered_reader(self, where)
        return readers

    @property
    def signature(self) -> tuple[Any, ...]:
        """What rows encoded for this layout depend on (see :mod:`spi.kv.bulk`)."""
        return (self.table_id, tuple(self.columns), self.spec, self.building)

    def stretches(self) -> list[bytes]:
        """The first keys of the stretches of the key space this table's entries of each
        kind fill (rows, each index's entries, expiry entries, the row counter)."""
        return sorted([self.row_prefix, *(prefix for _, prefix, _ in self.indexes), self.expiry_prefix, self.count_key])

    def load_preparer(self) -> KvLoadPreparer:
        """A new bulk-load preparer for this layout (see :mod:`spi.kv.bulk`)."""
        indexes = [(c, prefix) for c, prefix, _ in self.indexes]
        return KvLoadPreparer(self.spec, self.columns, self.row_prefix, indexes, self.signature)

    def index_prefix(self, column: str) -> bytes:
        """Byte prefix of every entry of the index on ``column``."""
        return self.prefix + INDEX + _U16.pack(self.index_ids[column])

    def encode_row(self, values: dict[str, Any], version: int, expires: int | None = None) -> bytes:
        """The stored form of a full row: msgpack ``[version, value...]`` (``[[version,
        expires], value...]`` when it expires)."""
        if self.timestamps:
            values = {**values, **{c: to_micros(values[c]) for c in self.timestamps if values[c] is not None}}
        return self._pack((version if expires is None else (version, expires), *self._get_all(values)))

    def expiry_key(self, expires: int, encoded_key: bytes) -> bytes:
        """Store key of the expiry entry of the row with ``encoded_key``."""
        return self.expiry_prefix + _U64.pack(expires) + encoded_key

    def expired_bound(self, now: int) -> bytes:
        """The end (exclusive) of the expiry entries of rows expired at ``now``."""
        return self.expiry_prefix + _U64.pack(now + 1)

    def _from_micros(self, values: dict[str, Any]) -> dict[str, Any]:
        for c in self.timestamps:
            if values[c] is not None:
                values[c] = from_micros(values[c])
        return values

    @staticmethod
    def stored_version(data: bytes) -> int | None:
        """The version of the stored row ``data`` (:meth:`encode_row`'s form) read from
        its first bytes, without decoding its values; None when the row expires (its
        head is ``[version, expires]``). An upsert of every column needs nothing else."""
        at = 1 if data[0] < 0xA0 else 3 if data[0] == 0xDC else 5  # fixarray, array 16, array 32
        tag = data[at]
        if tag < 0x80:  # positive fixint
            return tag
        size = _UINT_SIZES.get(tag)
        return None if size is None else int.from_bytes(data[at + 1 : at + 1 + size])

    def changed_in_place(self, data: bytes, column: str, change: Callable[[Any], Any]) -> tuple[bytes, Any] | None:
        """The stored row ``data`` at its next version with ``column``'s stored value
        ``v`` replaced by ``change(v)``, and that new value, re-encoded without building
        the row (an increment of a number); None when the row expires."""
        stored = unpack(data)
        if stored[0].__class__ is not int:
            return None
        at = self.columns.index(column) + 1
        if at >= len(stored):  # stored before the column was added: it reads as null
            stored += [None] * (at + 1 - len(stored))
        stored[0] += 1
        stored[at] = new = change(stored[at])
        return self._pack(stored), new

    def decode_row(self, data: bytes) -> Stored:
        """Inverse of :meth:`encode_row`."""
        raw = unpack(data)
        head = raw[0]
        if head.__class__ is int:
            return Stored(self.values_of(raw), head)
        return Stored(self.values_of(raw), head[0], head[1])

    def index_key(self, column: str, value: Any, encoded_key: bytes) -> bytes:
        """Store key of one index entry."""
        return self.index_prefix(column) + self._encoders[column](value) + encoded_key

    def catalog_entry(self) -> bytes:
        """The stored catalog entry of this layout (see :meth:`from_catalog_entry`)."""
        entry = {"spec": self.spec.to_catalog(), "id": self.table_id, "layout": self.columns}
        if self.building:
            entry["building"] = list(self.building)
        return pack(entry)

    @classmethod
    def from_catalog_entry(cls, data: bytes) -> Layout:
        """The layout a catalog entry describes."""
        entry = unpack(data)
        return cls(
            TableSpec.from_catalog(entry["spec"]), entry["layout"], entry["id"], tuple(entry.get("building", ()))
        )


class LayoutCache:
    """Decoded layouts of one store, by table name and by stored catalog entry.

    A layout found by name is trusted without reading the catalog while the store's
    :meth:`~spi.kv.store.StoreSession.generation` is the one it was found under:
    nothing outside this process can have written the store since, and every catalog
    change here advances the generation. Otherwise a transaction reads the catalog
    entry (one small read), so a change made by another process is seen at once, and
    only the decoding (building the spec, the codecs and the row builder) is saved.
    A store runs one transaction at a time, which is what lets transactions share
    these layouts.
    """

    MAX_ENTRIES = 1024

    def __init__(self) -> None:
        self._layouts: dict[bytes, Layout] = {}
        self._by_name: dict[str, tuple[int, Layout]] = {}
        self.clock: Clock = SYSTEM_CLOCK
        """The provider's clock, which decides expiry (:mod:`spi.clock`; see
        :attr:`spi.kv.provider.KvProvider.clock`): kept here because every part of the
        engine that reads rows (transactions, auto-commit handles, the admin's sweep)
        is handed this provider's cache."""

    def get(self, entry: bytes) -> Layout:
        """The layout the catalog entry ``entry`` describes."""
        layout = self._layouts.get(entry)
        if layout is None:
            if len(self._layouts) >= self.MAX_ENTRIES:
                self._layouts.clear()
            layout = self._layouts[entry] = Layout.from_catalog_entry(entry)
        return layout

    def current(self, name: str, generation: int | None) -> Layout | None:
        """The layout of ``name`` remembered under ``generation``, if any."""
        known = self._by_name.get(name)
        if known is None or generation is None or known[0] != generation:
            return None
        return known[1]

    def remember(self, name: str, generation: int | None, layout: Layout) -> None:
        """Remember the stored layout of ``name`` as read under ``generation``."""
        if generation is not None:
            if len(self._by_name) >= self.MAX_ENTRIES:
                self._by_name.clear()
            self._by_name[name] = (generation, layout)


RowReader = Callable[[Any, Iterator[list[bytes]], "int | None", Clock], Iterator[Row]]
"""See :meth:`Layout.readers`."""
Readers = tuple[
    RowReader,
    Callable[[Iterable[list[bytes]], "int | None", Clock], list[Row]],
    Callable[[Iterable[list[bytes]], Clock], Iterator[Row]],
    Callable[[list[bytes], int], list[int]],
]
"""See :meth:`Layout.readers`."""


@functools.lru_cache(maxsize=64)
def _row_reader(row: type[StoredRow]) -> Readers:
    """:meth:`Layout.readers` (no filter) for rows of the struct type ``row``.

    Generated: one decode a chunk straight into the rows, then one generator step
    (one loop step in the list form) a row, checking its expiry."""
    return _generated_reader(row, None, {})


def _filtered_reader(layout: Layout, where: Expr) -> Readers:
    """:meth:`Layout.readers` keeping only the rows the bound ``where`` is true for,
    tested on the stored array (:mod:`spi.predicate`) before any row is built."""
    columns, spec = layout.columns, layout.spec
    position = {c: i for i, c in enumerate(columns)}
    used: set[int] = set()

    def value_of(column: str) -> str:
        used.add(position[column])
        return f"r.c{position[column]}"

    builder = PredicateBuilder(
        {c: spec.type_of(c) for c in columns},
        value_of,
        lambda column, value: to_micros(value) if column in layout.timestamps and value is not None else value,
    )
    keep = builder.source(where)
    probe = max(used, default=-1) + 1
    return _generated_reader(layout.row_type, keep, builder.namespace, probe)


def _generated_reader(
    row: type[StoredRow], keep: str | None, names: dict[str, Any], probe: int | None = None
) -> Readers:
    """:meth:`Layout.readers` for rows of the struct type ``row``
    (:func:`spi.kv.rowtypes.row_type`), skipping rows for which the expression ``keep``
    (over the stored row ``r``; ``names`` holds what it refers to) is not true.

    With ``probe`` (fewer than the columns: the columns ``keep`` reads all come before
    it) a chunk decodes only its rows' first ``probe`` columns (msgpack skips the rest
    without making their values), and a row ``keep`` is true for decodes whole."""
    n = len(row.columns)
    probing = probe is not None and probe < n
    test = f"if {keep} is not True:\n    continue\n" if keep is not None else ""
    whole = "r = decode_one(data)\n" if probing else ""

    def row_of(lazy: bool) -> str:
        # ``lazy``: now is read at the first row that expires (a point read of a row
        # without expiry reads no clock); else once before the loop (a scan).
        # ``v[1] <= now``: not spi.clock.is_live, inline (a call per row would cost).
        first = "    if now is None:\n        now = now_micros(clock)\n" if lazy else ""
        return f"v = r.head\nif v.__class__ is not int:\n{first}    if v[1] <= now:\n        continue\n{test}{whole}"

    row_source, row_lazy = row_of(False), row_of(True)
    row_of_test = f"v = r.head\nif v.__class__ is not int and v[1] <= now:\n    continue\n{test}"
    # A chunk's stored values decode in one call, behind a msgpack array header.
    decoded = "decode(array_head(len(chunk)) + join(chunk))"
    loop = f"for data, r in zip(chunk, {decoded}):" if probing else f"for r in {decoded}:"
    body = (
        f"def read_rows(view, chunks, limit, clock):\n"
        f"    n = 0\n"
        f"    now = now_micros(clock)\n"
        f"    while True:\n"
        f"        if view.ended:  # checked before the store is touched again\n"
        f"            raise ended_error()\n"
        f"        chunk = next(chunks, None)\n"
        f"        if chunk is None:\n"
        f"            return\n"
        f"        {loop}\n"
        f"            if view.ended:\n"
        f"                raise ended_error()\n"
        f"{indent(row_source, ' ' * 12)}"
        f"            yield r\n"
        f"            n += 1\n"
        f"            if n == limit:\n"
        f"                return\n"
        f"def read_list(chunks, limit, clock):\n"
        f"    rows = []\n"
        f"    append = rows.append\n"
        f"    n = 0\n"
        f"    now = None\n"
        f"    for chunk in chunks:\n"
        f"        {loop}\n"
        f"{indent(row_lazy, ' ' * 12)}"
        f"            append(r)\n"
        f"            n += 1\n"
        f"            if n == limit:\n"
        f"                return rows\n"
        f"    return rows\n"
        f"def read_all(chunks, clock):\n"
        f"    now = now_micros(clock)\n"
        f"    for chunk in chunks:\n"
        f"        {loop}\n"
        f"{indent(row_source, ' ' * 12)}"
        f"            yield r\n"
        f"def positions(chunk, now):\n"
        f"    found = []\n"
        f"    append = found.append\n"
        f"    for i, r in enumerate({decoded}):\n"
        f"{indent(row_of_test, ' ' * 8)}"
        f"        append(i)\n"
        f"    return found\n"
    )
    namespace: dict[str, Any] = {
        **names,
        "decode": _stored_decoder(probe)
        if probing and probe is not None
        else msgspec.msgpack.Decoder(list[row]).decode,  # type: ignore[valid-type]
        "decode_one": msgspec.msgpack.Decoder(row).decode,
        "array_head": functools.partial(_ARRAY32.pack, 0xDD),  # msgpack array32: 0xdd, count
        "join": b"".join,
        "ended_error": ended_error,
        "now_micros": now_micros,
    }
    exec(body, namespace)
    return namespace["read_rows"], namespace["read_list"], namespace["read_all"], namespace["positions"]


@functools.lru_cache(maxsize=64)
def _stored_decoder(n: int) -> Callable[[bytes], Any]:
    """Decoding of a msgpack array of stored rows into a list of structs of their
    first ``n`` columns only: ``head`` (the version, or ``[version, expires]``) and
    ``c0``... (null for columns added after the row was written; the rest skipped)."""
    fields: list[Any] = [("head", Any), *((f"c{i}", Any, None) for i in range(n))]
    probed = msgspec.defstruct("ProbedRow", fields, array_like=True, gc=False)
    return msgspec.msgpack.Decoder(list[probed]).decode  # type: ignore[valid-type]


@functools.lru_cache(maxsize=64)
def _dict_builder(n: int) -> Callable[..., Callable[[list[Any]], dict[str, Any]]]:
    """``make(*columns)`` returning ``build(raw)`` = ``{columns[i]: raw[i + 1]}``, with
    ``raw`` padded with nulls when it is short (:mod:`spi.codegen`)."""
    body = (
        f"def build(r):\n"
        f"    if len(r) <= {n}:\n"
        f"        r = r + [None] * ({n + 1} - len(r))\n"
        f"    return {dict_display(n, lambda i: f'r[{i + 1}]')}\n"
    )
    return column_closure(n, body, {})


def range_bytes(prefix: bytes, key_types: tuple[FieldType, ...], r: ResolvedRange) -> tuple[bytes, bytes | None]:
    """Byte interval ``[lo, hi)`` of the keys in ``r`` under ``prefix``."""
    lo = prefix
    if r.start is not None:
        enc = encode_key(key_types, r.start)
        lo = prefix + enc if r.start_inclusive else prefix + (prefix_successor(enc) or enc)
    end_all = prefix_successor(prefix)
    hi = end_all
    if r.end is not None:
        enc = encode_key(key_types, r.end)
        if r.end_inclusive:
            succ = prefix_successor(enc)
            hi = end_all if succ is None else prefix + succ
        else:
            hi = prefix + enc
    return lo, hi
