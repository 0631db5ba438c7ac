"""Temp files of length-prefixed msgpack blocks: what a spilling sort
(:mod:`spi.sorting`) and a spilling transaction (:mod:`spi.kv.spill`) write, and read
back a block at a time, so memory holds a block per file whatever the file's length.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import IO, Any

import msgspec

_LENGTH = struct.Struct(">I")


def temp_file(prefix: str) -> IO[bytes]:
    """A new anonymous temp file (``$TMPDIR``), gone once closed."""
    import tempfile  # here: tempfile imports random, which no everyday command needs at start

    return tempfile.TemporaryFile(prefix=prefix)


def write_block(out: IO[bytes], encoder: msgspec.msgpack.Encoder, block: object) -> None:
    """Append ``block`` (anything msgpack encodes) to ``out``."""
    data = encoder.encode(block)
    out.write(_LENGTH.pack(len(data)))
    out.write(data)


def read_blocks(source: IO[bytes]) -> Iterator[Any]:
    """The blocks of ``source``, from its start, each decoded when reached."""
    source.flush()
    source.seek(0)
    decode = msgspec.msgpack.Decoder().decode
    while head := source.read(_LENGTH.size):
        yield decode(source.read(_LENGTH.unpack(head)[0]))
