"""Order-preserving binary encoding of typed values and composite keys.

For every type the byte order of the encoding equals the contract's value order,
and every encoding is self-delimiting, so a composite key is the concatenation of
its parts and a key prefix encodes to a byte prefix. Layouts:

- ``int``/``long``: 8 bytes big-endian with the sign bit flipped (one width for
  both, so widening ``int``→``long`` never re-encodes an index).
- ``float``/``double``: the IEEE double, big-endian; positive numbers get the sign
  bit set, negative ones are bit-inverted. NaN (canonical) sorts above +inf.
- ``string`` (UTF-8) and ``bytes``: 0x00 is escaped as 0x00 0xFF and the value
  ends with 0x00 0x01.
- ``bool``: one byte; ``timestamp``: microseconds since the epoch as a ``long``.

Nullable values (index entries) carry a leading 0x00 for null, 0x01 otherwise, so
null sorts first.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any

from spi.types import FieldType

_U64 = struct.Struct(">Q")
_D64 = struct.Struct(">d")
_SIGN = 1 << 63
_MASK = (1 << 64) - 1
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_TERMINATOR = b"\x00\x01"


def _encode_int(value: int) -> bytes:
    return _U64.pack((value + _SIGN) & _MASK)


def _decode_int(data: bytes, pos: int) -> tuple[int, int]:
    return _U64.unpack_from(data, pos)[0] - _SIGN, pos + 8


def _encode_float(value: float) -> bytes:
    bits = _U64.unpack(_D64.pack(value + 0.0))[0]
    bits = bits ^ _MASK if bits & _SIGN else bits | _SIGN
    return _U64.pack(bits)


def _decode_float(data: bytes, pos: int) -> tuple[float, int]:
    bits = _U64.unpack_from(data, pos)[0]
    bits = bits ^ _SIGN if bits & _SIGN else bits ^ _MASK
    return _D64.unpack(_U64.pack(bits))[0], pos + 8


def _encode_bytes(value: bytes) -> bytes:
    return value.replace(b"\x00", b"\x00\xff") + _TERMINATOR


def _decode_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    end = data.index(_TERMINATOR, pos)
    # An escaped 0x00 is 0x00 0xFF, so the first 0x00 0x01 is the terminator.
    return data[pos:end].replace(b"\x00\xff", b"\x00"), end + 2


def _micros(value: dt.datetime) -> int:
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> dt.datetime:
    """The aware UTC datetime ``micros`` microseconds after the epoch."""
    return _EPOCH + dt.timedelta(microseconds=micros)


def to_micros(value: dt.datetime) -> int:
    """Microseconds since the epoch of an aware datetime."""
    return _micros(value)


def encode_value(ftype: FieldType, value: Any) -> bytes:
    """Encode one non-null, already validated value."""
    try:
        encode = _ENCODERS[ftype]
    except KeyError:
        raise ValueError(f"unknown field type {ftype!r}") from None
    return encode(value)


def _encode_string(value: str) -> bytes:
    return _encode_bytes(value.encode("utf-8"))


def _encode_bool(value: bool) -> bytes:
    return b"\x01" if value else b"\x00"


def _encode_timestamp(value: dt.datetime) -> bytes:
    return _encode_int(_micros(value))


_ENCODERS: dict[FieldType, Callable[[Any], bytes]] = {
    FieldType.INT: _encode_int,
    FieldType.LONG: _encode_int,
    FieldType.FLOAT: _encode_float,
    FieldType.DOUBLE: _encode_float,
    FieldType.STRING: _encode_string,
    FieldType.BYTES: _encode_bytes,
    FieldType.BOOL: _encode_bool,
    FieldType.TIMESTAMP: _encode_timestamp,
}


def key_encoder(types: Sequence[FieldType]) -> Callable[[Sequence[Any]], bytes]:
    """:func:`encode_key` of complete keys of ``types``, as a one-argument function."""
    encoders = [_ENCODERS[t] for t in types]
    if len(encoders) == 1:
        only = encoders[0]
        return lambda values: only(values[0])
    return lambda values: b"".join([e(v) for e, v in zip(encoders, values)])


def column_encoder(ftype: FieldType) -> Callable[[Iterable[Any]], list[bytes]]:
    """:func:`encode_value` of every value of a column of validated, non-null values,
    in passes of C-level ``map`` where the type allows (integers, timestamps'
    microseconds and strings); exactly what the per-value encoder gives."""
    if ftype is FieldType.INT or ftype is FieldType.LONG:
        # Validated: value + 2**63 is in [0, 2**64), so the mask of _encode_int is a no-op.
        return lambda values: list(map(_U64.pack, map(_SIGN.__add__, values)))
    if ftype is FieldType.TIMESTAMP:
        return lambda values: list(map(_U64.pack, map(_SIGN.__add__, map(_micros, values))))
    if ftype is FieldType.STRING:
        return _strings
    encode = _ENCODERS[ftype]
    return lambda values: list(map(encode, values))


def _strings(values: Iterable[str]) -> list[bytes]:
    utf8 = map(str.encode, values)
    escaped = map(bytes.replace, utf8, repeat(b"\x00"), repeat(b"\x00\xff"))
    return list(map(bytes.__add__, escaped, repeat(_TERMINATOR)))


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
    if ftype is FieldType.INT or ftype is FieldType.LONG:
        pack = _U64.pack  # inlined: index upkeep of integer columns is the common case
        return lambda value: b"\x00" if value is None else b"\x01" + pack((value + _SIGN) & _MASK)
    encode = _ENCODERS[ftype]
    return lambda value: b"\x00" if value is None else b"\x01" + encode(value)


def decode_value(ftype: FieldType, data: bytes, pos: int = 0) -> tuple[Any, int]:
    """Decode one value starting at ``pos``; returns it and the position after it."""
    if ftype is FieldType.INT or ftype is FieldType.LONG:
        return _decode_int(data, pos)
    if ftype is FieldType.STRING:
        raw, end = _decode_bytes(data, pos)
        return raw.decode("utf-8"), end
    if ftype is FieldType.DOUBLE or ftype is FieldType.FLOAT:
        return _decode_float(data, pos)
    if ftype is FieldType.BYTES:
        return _decode_bytes(data, pos)
    if ftype is FieldType.BOOL:
        return data[pos] == 1, pos + 1
    if ftype is FieldType.TIMESTAMP:
        micros, end = _decode_int(data, pos)
        return from_micros(micros), end
    raise ValueError(f"unknown field type {ftype!r}")


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
