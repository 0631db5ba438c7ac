"""Opaque scan tokens: where a paginated scan stopped, valid across processes.

A token holds the encoded sort position of the last row returned (the index value
and key for an index-ordered scan, the key otherwise), the scan's order, and the
spec's fingerprint, as URL-safe base64 of a small JSON document.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from spi.errors import InvalidFieldError
from spi.spec import TableSpec

_VERSION = 1


@dataclass(frozen=True)
class ScanPosition:
    """Where a scan resumes: strictly after ``last`` in the scan's order.

    ``last`` is None for "before the first row". ``order_by`` is None for key order.
    """

    order_by: str | None
    descending: bool
    last: bytes | None


def encode_token(spec: TableSpec, position: ScanPosition) -> str:
    """Serialise a position bound to ``spec``."""
    doc = {
        "v": _VERSION,
        "t": spec.name,
        "s": spec.fingerprint(),
        "o": position.order_by,
        "d": position.descending,
        "k": None if position.last is None else base64.b64encode(position.last).decode("ascii"),
    }
    raw = json.dumps(doc, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_token(spec: TableSpec, token: str, *, order_by: str | None, descending: bool) -> ScanPosition:
    """Parse a token, checking it belongs to this table, spec and order."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        doc = json.loads(raw)
        last = None if doc["k"] is None else base64.b64decode(doc["k"])
        position = ScanPosition(doc["o"], bool(doc["d"]), last)
        ok = doc["v"] == _VERSION
        table, fingerprint = doc["t"], doc["s"]
    except (binascii.Error, ValueError, KeyError, TypeError, RecursionError):
        raise InvalidFieldError("scan token is malformed; pass the token a previous page returned") from None
    if not ok or table != spec.name:
        raise InvalidFieldError(f"scan token belongs to another table ({table!r}), not {spec.name!r}")
    if fingerprint != spec.fingerprint():
        raise InvalidFieldError(f"scan token is stale: the spec of {spec.name!r} changed since it was issued")
    if position.order_by != order_by or position.descending != descending:
        raise InvalidFieldError("scan token was issued for another order; continue in the order the scan started with")
    return position
