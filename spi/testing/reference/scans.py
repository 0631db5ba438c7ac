"""Scans in the reference model: which rows, in what order, and page tokens.

A scan reads every row of the table, keeps those inside the key bounds whose filter
is true, and sorts them by their position: the key tuple, or the ``order_by`` value
then the key tuple; ``descending`` reverses the comparison. A page token is the
position of the last row returned, as JSON.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any

from spi.errors import InvalidFieldError
from spi.filters import Expr
from spi.keys import Range
from spi.spec import TableSpec
from spi.testing.reference.checks import Bounds, check_order_by, check_range
from spi.testing.reference.order import compare_tuples
from spi.testing.reference.predicates import check_where, truth
from spi.testing.reference.records import Record

Position = tuple[Any, ...]
"""Where a row sorts in a scan: its key, or its ``order_by`` value then its key."""


@dataclass(frozen=True)
class Scan:
    """A checked scan request: key bounds, filter, order."""

    bounds: Bounds
    where: Expr | None
    order_by: str | None = None
    descending: bool = False


def check_scan(
    spec: TableSpec, rng: Range | None, where: Expr | None, order_by: str | None = None, descending: bool = False
) -> Scan:
    """Validate a scan's arguments (errors are raised now, before any row is read)."""
    return Scan(check_range(spec, rng), check_where(spec, where), check_order_by(spec, order_by), bool(descending))


def in_bounds(key: tuple[Any, ...], bounds: Bounds) -> bool:
    """Is ``key`` inside ``bounds``? A bound of n values is compared with the key's first n."""
    if bounds.start is not None:
        c = compare_tuples(key[: len(bounds.start)], bounds.start)
        if c < 0 or (c == 0 and not bounds.start_inclusive):
            return False
    if bounds.end is not None:
        c = compare_tuples(key[: len(bounds.end)], bounds.end)
        if c > 0 or (c == 0 and not bounds.end_inclusive):
            return False
    return True


def position(spec: TableSpec, scan: Scan, record: Record) -> Position:
    """The record's position in the scan's order."""
    key = record.key(spec)
    return key if scan.order_by is None else (record.values[scan.order_by], *key)


def compare_in_scan(scan: Scan, a: Position, b: Position) -> int:
    """-1, 0 or 1 as position ``a`` comes before, at or after ``b`` in the scan."""
    c = compare_tuples(a, b)
    return -c if scan.descending else c


def select(spec: TableSpec, rows: Sequence[Record], scan: Scan, after: Position | None = None) -> list[Record]:
    """The rows the scan returns, in order, strictly after ``after`` when given."""
    found = [
        r
        for r in rows
        if in_bounds(r.key(spec), scan.bounds) and (scan.where is None or truth(scan.where, r.values) is True)
    ]
    if after is not None:
        found = [r for r in found if compare_in_scan(scan, position(spec, scan, r), after) > 0]

    def compare(a: Record, b: Record) -> int:
        return compare_in_scan(scan, position(spec, scan, a), position(spec, scan, b))

    return sorted(found, key=cmp_to_key(compare))


def encode_token(spec: TableSpec, scan: Scan, after: Position | None) -> str:
    """A page token: the scan's order and the position to resume strictly after."""
    return json.dumps(
        {
            "table": spec.name,
            "spec": spec.fingerprint(),
            "order_by": scan.order_by,
            "descending": scan.descending,
            "after": None if after is None else [_encode(v) for v in after],
        }
    )


def decode_token(spec: TableSpec, scan: Scan, token: Any) -> Position | None:
    """The position in a token of :func:`encode_token`; it must be for this table and order."""
    try:
        doc = json.loads(token)
        same = (doc["table"], doc["spec"], doc["order_by"], doc["descending"]) == (
            spec.name,
            spec.fingerprint(),
            scan.order_by,
            scan.descending,
        )
        after = None if doc["after"] is None else tuple(_decode(v) for v in doc["after"])
    except (TypeError, ValueError, KeyError, IndexError):
        raise InvalidFieldError("scan token is malformed; pass the token a previous page returned") from None
    if not same:
        raise InvalidFieldError("scan token is for another table, spec or order")
    return after


def _encode(value: Any) -> list[Any]:
    """A value as JSON: [type tag, payload]."""
    if value is None:
        return ["null", None]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, float):
        return ["float", repr(value)]  # repr keeps nan and inf, and every bit of the value
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, bytes):
        return ["bytes", value.hex()]
    if isinstance(value, dt.datetime):
        return ["timestamp", value.isoformat()]
    raise TypeError(f"cannot put {value!r} in a scan token")


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "null": lambda _: None,
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "bytes": bytes.fromhex,
    "timestamp": dt.datetime.fromisoformat,
}


def _decode(item: list[Any]) -> Any:
    tag, payload = item
    return _DECODERS[tag](payload)
