"""Order-preserving binary encoding of typed values and composite keys.

For every type the byte order of the encoding equals the contract's value order,
and every encoding is self-delimiting, so a composite key is the concatenation of
its parts and a key prefix encodes to a byte prefix. Each type's layout is its type
object's (:meth:`spi.types.ColumnType.encode`, described in the modules of
:mod:`spi.types`); this module puts them together into keys and index values.

Nullable values (index entries) carry a leading 0x00 for null, 0x01 otherwise, so
null sorts first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from spi.types import FieldType, impl_of
from spi.types.integers import MASK, SIGN, U64
from spi.types.timestamps import from_micros, to_micros

__all__ = [
    "column_encoder",
    "decode_key",
    "decode_nullable",
    "decode_value",
    "encode_key",
    "encode_nullable",
    "encode_value",
    "from_micros",
    "key_column_encoder",
    "key_encoder",
    "nullable_encoder",
    "prefix_successor",
    "to_micros",
]


def encode_value(ftype: FieldType, value: Any) -> bytes:
    """Encode one non-null, already validated value."""
    return impl_of(ftype).encode(value)


def key_encoder(types: Sequence[FieldType]) -> Callable[[Sequence[Any]], bytes]:
    """:func:`encode_key` of complete keys of ``types``, as a one-argument function."""
    encoders = [impl_of(t).encode for t in types]
    if len(encoders) == 1:
        only = encoders[0]
        return lambda values: only(values[0])
    return lambda values: b"".join([e(v) for e, v in zip(encoders, values)])


def column_encoder(ftype: FieldType) -> Callable[[Iterable[Any]], list[bytes]]:
    """:func:`encode_value` of every value of a column of validated, non-null values
    (:meth:`spi.types.ColumnType.encode_column`: C-level passes where the type allows)."""
    return impl_of(ftype).encode_column


def key_column_encoder(types: Sequence[FieldType]) -> Callable[[Sequence[Iterable[Any]]], list[bytes]]:
    """:func:`encode_key` of complete keys given column by column (one iterable of
    values per key column), as :func:`column_encoder` encodes each column."""
    encoders = [column_encoder(t) for t in types]
    if len(encoders) == 1:
        only = encoders[0]
        return lambda columns: only(columns[0])
    return lambda columns: list(map(b"".join, zip(*[e(c) for e, c in zip(encoders, columns)])))


def nullable_encoder(ftype: FieldType) -> Callable[[Any], bytes]:
    """:func:`encode_nullable` for one type, as a one-argument function."""
    impl = impl_of(ftype)
    if impl.integer:
        pack = U64.pack  # inlined: index upkeep of integer columns is the common case
        return lambda value: b"\x00" if value is None else b"\x01" + pack((value + SIGN) & MASK)
    encode = impl.encode
    return lambda value: b"\x00" if value is None else b"\x01" + encode(value)


def decode_value(ftype: FieldType, data: bytes, pos: int = 0) -> tuple[Any, int]:
    """Decode one value starting at ``pos``; returns it and the position after it."""
    return impl_of(ftype).decode(data, pos)


def encode_key(types: Sequence[FieldType], values: Sequence[Any]) -> bytes:
    """Encode a key or key prefix (``len(values) <= len(types)``)."""
    return b"".join([encode_value(t, v) for t, v in zip(types, values)])


def decode_key(types: Sequence[FieldType], data: bytes, pos: int = 0) -> tuple[tuple[Any, ...], int]:
    """Decode a full key starting at ``pos``."""
    out = []
    for t in types:
        value, pos = decode_value(t, data, pos)
        out.append(value)
    return tuple(out), pos


def encode_nullable(ftype: FieldType, value: Any) -> bytes:
    """Encode a value that may be null (null sorts before every value)."""
    return b"\x00" if value is None else b"\x01" + encode_value(ftype, value)


def decode_nullable(ftype: FieldType, data: bytes, pos: int = 0) -> tuple[Any, int]:
    """Inverse of :func:`encode_nullable`."""
    if data[pos] == 0:
        return None, pos + 1
    return decode_value(ftype, data, pos + 1)


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``.

    None when there is none (the prefix is empty or all 0xFF).
    """
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])
