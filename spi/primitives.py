"""What a provider's primitives exchange with :class:`spi.table.TableBase`: stored rows,
scan requests, column batches, scan positions and what a load keeps of each row."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from spi.codec import encode_key, encode_nullable, key_encoder, nullable_encoder
from spi.filters import Expr
from spi.keys import ResolvedRange, key_of
from spi.spec import TableSpec

ColumnBatch = dict[str, list[Any]]
"""A batch of rows column by column: column name → its values, one per row (rows in scan order)."""


class Stored(NamedTuple):
    """A stored row as the primitives exchange it: every column, its version and its
    expiry (microseconds since the epoch; None: never).

    ``values`` is a fresh dict the receiver may keep (rows returned to callers
    adopt it without copying); nobody mutates it."""

    values: dict[str, Any]
    version: int
    expires: int | None = None


class Kept(NamedTuple):
    """What a load with ``keep_versions=True`` keeps of each row of a batch besides its
    values, in batch order: ``versions[i]`` is the version row ``i`` is written with,
    ``expires[i]`` its expiry (microseconds since the epoch, None: never; read from
    the input row's ``expires_at``)."""

    versions: list[int]
    expires: list[int | None]


@dataclass(frozen=True)
class ScanRequest:
    """What ``_scan`` must return: rows in ``key_range`` matching ``where`` (bound),
    in ``order_by`` order (None: key order; else that column, then key), reversed
    when ``descending``, strictly after the encoded ``after`` position, at most
    ``limit`` rows (None: all)."""

    key_range: ResolvedRange
    where: Expr | None
    order_by: str | None = None
    descending: bool = False
    after: bytes | None = None
    limit: int | None = None


def sort_position(spec: TableSpec, values: Mapping[str, Any], order_by: str | None) -> bytes:
    """The encoded position of a row in a scan ordered by ``order_by`` (None: key).

    Byte order equals scan order, so providers can resume "strictly after" it.
    """
    key = encode_key(spec.key_types, key_of(spec, values))
    if order_by is None:
        return key
    return encode_nullable(spec.type_of(order_by), values[order_by]) + key


def position_encoder(spec: TableSpec, order_by: str) -> Callable[[Mapping[str, Any]], bytes]:
    """:func:`sort_position` in a scan ordered by ``order_by``, as a one-argument
    function of a row's values with its encoders chosen once (for many rows)."""
    key, value = key_encoder(spec.key_types), nullable_encoder(spec.type_of(order_by))
    columns = spec.primary_key
    return lambda values: value(values[order_by]) + key([values[c] for c in columns])
