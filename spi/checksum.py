"""Checksums of a table's rows that are equal across engines (``kvctl diff``).

**The row hash.** A row's compared values are encoded canonically, column by column
(its key columns in key order, then the hashed columns in the order given, then
with ``versions`` its version), each as a type tag and bytes:

=============  ====  ================================================================
type           tag   bytes after the tag
=============  ====  ================================================================
null           0x00  none
int, long      0x01  8-byte big-endian signed
float, double  0x02  the 8-byte big-endian IEEE double of the value as a double
                     (-0.0 as 0.0, every NaN as ``7ff8000000000000``)
string         0x03  4-byte big-endian length, then the UTF-8 bytes
bytes          0x04  4-byte big-endian length, then the bytes
bool           0x05  one byte, 0 or 1
timestamp      0x06  8-byte big-endian signed microseconds since the epoch
version        0x01  as a long (appended last)
=============  ====  ================================================================

so int and long columns, and float and double ones, hash their equal values equally.
The row's hash is the first 8 bytes of the MD5 digest of that encoding, as an
unsigned 64-bit integer (summed a few thousand digests at a time, in C). A set of rows has the :class:`Checksum` (rows, sum of the
row hashes mod 2^64): it does not depend on the order the rows are read in, so a
store may compute it however it scans (PostgreSQL computes the same bytes in SQL:
:mod:`providers.postgres.checksum`).

**The operations.** ``table.checksum(range, where=, columns=, versions=)`` is the
checksum of the live rows in range matching ``where``; ``table.segments(...,
size=N)`` cuts those rows, in key order, into runs of ``size`` rows and gives each
run's first and last keys and checksum (:class:`Segment`), so that another store can
be asked for the checksums of the same key ranges. :class:`Checksums` implements both for
:class:`spi.table.TableBase` over one streamed scan; a provider may override
``_checksum`` and ``_segments`` to compute them where the rows are. Expiry is not
hashed (an expired row is not a row).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple

from spi.codec import to_micros
from spi.codegen import column_closure
from spi.errors import InvalidFieldError
from spi.filters import Expr, bind
from spi.keys import Range, key_of, resolve_range
from spi.primitives import ScanRequest
from spi.spec import TableSpec

if TYPE_CHECKING:
    from spi.row import Row

SEGMENT_ROWS = 10_000
"""The rows per segment of :meth:`Checksums.segments` by default."""
_CHUNK = 4096
"""Digests summed at a time."""
MASK = 2**64 - 1
"""Checksums add row hashes modulo 2^64."""

NULL = b"\x00"
"""A null value's encoding."""
NAN = bytes.fromhex("7ff8000000000000")
"""The one encoding of every NaN (after its tag)."""

_FIXED = struct.Struct(">Bq")  # tag + 8-byte signed
_DOUBLE = struct.Struct(">Bd")  # tag + IEEE double
_SIZED = struct.Struct(">Bi")  # tag + 4-byte length


class Checksum(NamedTuple):
    """The checksum of a set of rows: how many, and the sum of their hashes mod 2^64."""

    rows: int
    total: int


class Segment(NamedTuple):
    """A run of rows in key order: the keys of its first and last rows (tuples in key
    order) and the checksum of its rows."""

    start: tuple[Any, ...]
    last: tuple[Any, ...]
    checksum: Checksum


def _string(value: str) -> bytes:
    data = value.encode("utf-8")
    return _SIZED.pack(3, len(data)) + data


def _bytes(value: bytes) -> bytes:
    return _SIZED.pack(4, len(value)) + value


_NAMESPACE: dict[str, Any] = {
    "_fixed": _FIXED.pack,
    "_double": _DOUBLE.pack,
    "_sized": _SIZED.pack,
    "_string": _string,
    "_bytes": _bytes,
    "_micros": to_micros,
    "_nan": bytes([2]) + NAN,
    "_true": b"\x05\x01",
    "_false": b"\x05\x00",
    "_null": NULL,
}


def check_hashed(spec: TableSpec, columns: Iterable[str] | None) -> tuple[str, ...]:
    """The non-key columns a checksum hashes: ``columns`` checked (existing, not key
    columns, each once), or every non-key column in spec order (None)."""
    if columns is None:
        return tuple(c for c in spec.columns if not spec.is_key(c))
    if isinstance(columns, str):
        raise InvalidFieldError("columns must be a list of column names, not a string")
    names = tuple(columns)
    for c in names:
        spec.type_of(c)  # an unknown column raises, naming it
        if spec.is_key(c):
            raise InvalidFieldError(f"{c!r} is a key column: key columns are always hashed", column=c)
    if len(set(names)) != len(names):
        raise InvalidFieldError(f"columns names a column twice: {', '.join(names)}")
    return names


def _encoding(spec: TableSpec, names: Sequence[str], versions: bool, micros: Iterable[str] = ()) -> str:
    """The source of the encoded row of the values ``v0, v1...`` of the columns ``names``
    (those in ``micros`` hold timestamps as microseconds) and ``version``."""
    as_micros = set(micros)
    parts = []
    for i, name in enumerate(names):
        ftype = spec.type_of(name)
        template = "_fixed(6, {v})" if name in as_micros else ftype.impl.checksum_source()
        value = template.format(v=f"v{i}")
        parts.append(value if spec.is_key(name) else f"(_null if v{i} is None else {value})")
    if versions:
        parts.append("_fixed(1, version)")
    return f"b''.join(({', '.join(parts)},))"


def row_hasher(
    spec: TableSpec,
    columns: Sequence[str],
    versions: bool,
    stored: tuple[type[Any], Mapping[str, str], Iterable[str]] | None = None,
) -> Callable[[Row], bytes]:
    """The function giving a row's MD5 digest (its first 8 bytes are the row's hash,
    :func:`hash_of`): its key columns, then ``columns`` (checked, see
    :func:`check_hashed`), then with ``versions`` its version (see the module
    docstring). Generated for the columns' types: one call per row.

    ``stored`` = (a row struct type, column → its field, the columns it holds as
    microseconds): rows of that type are read from their fields, others as mappings
    (an engine's own row structs skip the mapping's conversions)."""
    names = [*spec.primary_key, *columns]
    version = "row.version" if versions else "0"

    def digest(reads: list[str], micros: Iterable[str], indent: str) -> str:
        lines = [f"v{i} = {read}" for i, read in enumerate(reads)]
        lines += [f"version = {version}", f"return _md5({_encoding(spec, names, versions, micros)}).digest()"]
        return "".join(f"{indent}{line}\n" for line in lines)

    plain = [f"row[c{i}]" for i in range(len(names))]
    if stored is None:
        body = "def hash_row(row):\n" + digest(plain, (), "    ")
    else:
        struct_type, fields, micros = stored
        fast = digest([f"row.{fields[name]}" for name in names], micros, "        ")  # fields are c0, c1...
        body = f"def hash_row(row):\n    if type(row) is _struct:\n{fast}    {digest(plain, (), '    ').lstrip()}"
    from hashlib import md5  # here, not at import: OpenSSL's load is a few ms of every command's start

    namespace = {**_NAMESPACE, "_md5": md5, "_struct": None if stored is None else struct_type}
    hasher: Callable[[Row], bytes] = column_closure(len(names), body, namespace, "hash_row")(*names)
    return hasher


def hash_of(digest: bytes) -> int:
    """A row's hash: the first 8 bytes of its digest as an unsigned integer."""
    return int.from_bytes(digest[:8], "big")


def _total(digests: list[bytes]) -> int:
    """The sum of the hashes of ``digests`` (16 bytes each), in C: one unpack of them all."""
    return sum(struct.unpack(f">{2 * len(digests)}Q", b"".join(digests))[::2])


def checksum_rows(rows: Iterable[Row], hasher: Callable[[Row], bytes]) -> Checksum:
    """The checksum of ``rows``, each hashed by ``hasher`` (:func:`row_hasher`)."""
    digests = map(hasher, rows)
    count = total = 0
    while chunk := list(islice(digests, _CHUNK)):
        total += _total(chunk)
        count += len(chunk)
    return Checksum(count, total & MASK)


def segment_rows(
    spec: TableSpec, rows: Iterable[Row], hasher: Callable[[Row], bytes], size: int, limit: int | None = None
) -> list[Segment]:
    """``rows`` (in key order) cut into runs of ``size`` rows, each with its first and
    last keys and checksum (the last run may be shorter; no rows: no segment), at most
    ``limit`` runs (None: all): a segment's rows are held while it is hashed."""
    segments: list[Segment] = []
    rows = iter(rows)
    while limit is None or len(segments) < limit:
        first = next(rows, None)
        if first is None:
            break
        run = [first, *islice(rows, size - 1)]
        digests = list(map(hasher, run))
        checksum = Checksum(len(digests), _total(digests) & MASK)
        segments.append(Segment(key_of(spec, first), key_of(spec, run[-1]), checksum))
    return segments


def check_size(size: Any, what: str = "size") -> int:
    """A ``size`` (or ``limit``) argument of :meth:`Checksums.segments`: a positive integer."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise InvalidFieldError(f"{what} must be a positive integer, got {size!r}")
    return size


class Checksums:
    """``checksum`` and ``segments`` for :class:`spi.table.TableBase`: the arguments
    checked here, the computation by ``_checksum``/``_segments`` (by default over one
    streamed scan, hashed in Python)."""

    if TYPE_CHECKING:
        spec: TableSpec

        def _scan_rows(self, request: ScanRequest) -> Iterator[Row]: ...

    def _row_hasher(self, columns: tuple[str, ...], versions: bool) -> Callable[[Row], bytes]:
        """The digest of a row this table's scans return (:func:`row_hasher`; an engine
        may read its own row structs faster)."""
        return row_hasher(self.spec, columns, versions)

    def _hash_request(self, range: Range | None, where: Expr | None) -> ScanRequest:
        return ScanRequest(resolve_range(self.spec, range), None if where is None else bind(where, self.spec))

    def checksum(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        versions: bool = False,
    ) -> Checksum:
        """The :class:`Checksum` of the rows in range matching ``where``, hashing their
        key, ``columns`` (default: every other column) and with ``versions`` their
        version (see :mod:`spi.checksum`)."""
        hashed = check_hashed(self.spec, columns)
        return self._checksum(self._hash_request(range, where), hashed, bool(versions))

    def segments(
        self,
        range: Range | None = None,
        *,
        where: Expr | None = None,
        columns: Iterable[str] | None = None,
        versions: bool = False,
        size: int = SEGMENT_ROWS,
        limit: int | None = None,
    ) -> list[Segment]:
        """The rows in range matching ``where``, in key order, cut into runs of
        ``size`` rows: each run's first and last keys and :class:`Checksum` (hashed as
        by :meth:`checksum`), at most ``limit`` runs (None: all; no rows, no run)."""
        hashed = check_hashed(self.spec, columns)
        most = None if limit is None else check_size(limit, "limit")
        return self._segments(self._hash_request(range, where), hashed, bool(versions), check_size(size), most)

    def _checksum(self, request: ScanRequest, columns: tuple[str, ...], versions: bool) -> Checksum:
        """The checksum of the rows ``request`` selects; providers may compute it in the store."""
        return checksum_rows(self._scan_rows(request), self._row_hasher(columns, versions))

    def _segments(
        self, request: ScanRequest, columns: tuple[str, ...], versions: bool, size: int, limit: int | None
    ) -> list[Segment]:
        """The segments of the rows ``request`` selects; providers may compute them in the store."""
        hasher = self._row_hasher(columns, versions)
        return segment_rows(self.spec, self._scan_rows(request), hasher, size, limit)


__all__ = [
    "Checksum",
    "Checksums",
    "Segment",
    "check_hashed",
    "checksum_rows",
    "hash_of",
    "row_hasher",
    "segment_rows",
]
