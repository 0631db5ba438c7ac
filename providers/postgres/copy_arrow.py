"""Arrow record batches as PostgreSQL's binary COPY format, built in Arrow's C kernels.

A binary COPY tuple is a 16-bit field count, then each field as a 32-bit length (-1
for null) and the value's bytes, big-endian. Each column becomes one binary array of
its fields (a fixed-width value's bytes are its little-endian buffer read as
fixed-size binary and reversed; a string's or bytes' length comes first), the
lengths and values of a row are joined by one ``binary_join_element_wise`` (a null
has the length -1 and no bytes; a length every value shares is one scalar), and the
joined array's data buffer is the COPY data as it is: no Python object per value,
and no copy of it but Arrow's own. The kernels release the GIL, so a batch is
encoded while another thread reads or sends.

Only the types of :func:`spi.arrow.arrow_schema` are encoded (every spi field type);
any other Arrow type makes :func:`copy_data` return None, and the caller sends
Python tuples instead.
"""

from __future__ import annotations

import struct
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
"""The binary COPY header: its signature, no flags, no header extension."""
TRAILER = b"\xff\xff"
"""The end of the binary COPY data."""
_PG_EPOCH_MICROS = 946_684_800_000_000
"""2000-01-01 UTC (PostgreSQL's timestamp epoch) in microseconds since 1970."""


def int8_field(value: int) -> bytes:
    """The COPY field of an int8 (a version)."""
    return struct.pack(">iq", 8, value)


def timestamp_field(micros: int) -> bytes:
    """The COPY field of a timestamptz given in microseconds since 1970."""
    return struct.pack(">iq", 8, micros - _PG_EPOCH_MICROS)


def copy_data(batch: pa.RecordBatch, trailing: bytes, fields: int) -> memoryview | None:
    """The binary COPY tuples of ``batch``'s rows (its columns, then the constant
    ``trailing`` fields, ``fields`` fields in all), or None when a column's type has
    no encoding here or the tuples would not fit one Arrow binary array (2 GiB)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if sys.byteorder != "little":  # Arrow's buffers are native-endian; this reverses little-endian ones
        return None
    parts: list[Any] = [pa.scalar(struct.pack(">h", fields), pa.binary())]
    try:
        for column in batch.columns:
            field = _field(column)
            if field is None:
                return None
            parts += field
        parts += [pa.scalar(trailing, pa.binary()), pa.scalar(b"", pa.binary())]
        # A null value is joined as nothing: its length said -1 already.
        rows = pc.binary_join_element_wise(*parts, null_handling="replace", null_replacement=b"")
    except pa.ArrowException:  # more than 2 GiB of tuples: the caller sends them as rows
        return None
    offsets = pa.Array.from_buffers(pa.int32(), len(rows) + 1, [None, rows.buffers()[1]], offset=rows.offset)
    start, stop = offsets[0].as_py(), offsets[-1].as_py()
    return memoryview(rows.buffers()[2])[start:stop]


def _field(column: pa.Array) -> tuple[Any, pa.Array] | None:
    """The COPY field of each value of one column as its length (a scalar when every
    value has that length; -1 for a null) and its bytes (null for a null), or None for
    a type with no encoding here."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_binary(kind):
        data = column.cast(pa.binary())
        lengths = pc.binary_length(data).cast(pa.int32())
        return _big_endian(pc.fill_null(lengths, pa.scalar(-1, pa.int32())) if column.null_count else lengths, 4), data
    if pa.types.is_boolean(kind):
        column, width = column.cast(pa.uint8()), 1
    elif pa.types.is_timestamp(kind) and kind.unit == "us":
        column, width = pc.subtract(column.cast(pa.int64()), _PG_EPOCH_MICROS), 8
    elif pa.types.is_integer(kind) or pa.types.is_floating(kind):
        width = kind.bit_width // 8
    else:
        return None
    if column.null_count:
        length = _big_endian(
            pc.if_else(pc.is_valid(column), pa.scalar(width, pa.int32()), pa.scalar(-1, pa.int32())), 4
        )
    else:
        length = pa.scalar(struct.pack(">i", width), pa.binary())
    return length, _big_endian(column, width)


def _big_endian(column: pa.Array, width: int) -> pa.Array:
    """Each value of a fixed-width column as its ``width`` bytes, big-endian."""
    import pyarrow as pa
    import pyarrow.compute as pc

    assert column.type.bit_width == 8 * width, (column.type, width)
    validity, data = column.buffers()[:2]
    raw = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(column), [validity, data], offset=column.offset)
    as_binary = raw.cast(pa.binary())
    return as_binary if width == 1 else pc.binary_reverse(as_binary)
