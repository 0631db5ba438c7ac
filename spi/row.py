"""Rows and scan pages as the SPI returns them."""

from __future__ import annotations

from abc import ABCMeta
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from spi.codec import from_micros, to_micros


class _RowMeta(msgspec.StructMeta, ABCMeta):
    """A struct type that is also a :class:`~collections.abc.Mapping`."""


class Row(msgspec.Struct, Mapping[str, Any], metaclass=_RowMeta, gc=False, eq=False):
    """A read-only mapping column → value, with the row's ``version`` and
    :attr:`expires_at`.

    ``Row(values, version, expires)`` (``expires`` optional and positional: an aware
    datetime, or microseconds since the epoch) keeps ``values`` as given, not copied,
    as :attr:`mapping`: do not change them afterwards. A row is a msgspec struct
    outside the garbage collector (its values are plain data, so it is never part of
    a cycle): scans make one per row, and tracking each one cost about a tenth of a
    microsecond."""

    mapping: Mapping[str, Any]
    """The values themselves, not a copy (the fastest way to hand a row's values to a
    function that takes a dict): read it, never change it; :meth:`to_dict` gives a
    dict of your own."""
    version: int
    # Kept as given; the stores hand microseconds, and the datetime is made only when asked for.
    _expires: datetime | int | None = None

    @property
    def expires_at(self) -> datetime | None:
        """When the row expires (an aware UTC datetime), or None when it never does."""
        expires = self._expires
        if expires is None or type(expires) is int:
            return None if expires is None else from_micros(expires)
        return from_micros(self.expires)  # type: ignore[arg-type]  # a datetime given: in UTC

    @property
    def expires(self) -> int | None:
        """:attr:`expires_at` in microseconds since the epoch (None: never)."""
        expires = self._expires
        if isinstance(expires, datetime):
            if expires.tzinfo is None:
                raise ValueError(f"a row's expiry must be an aware datetime, not {expires.isoformat()}")
            return to_micros(expires)
        return expires

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        """What rich shows: the values, the version and the expiry (not the struct's fields)."""
        shown = [("values", dict(self.mapping)), ("version", self.version)]
        return shown if self._expires is None else [*shown, ("expires_at", self.expires_at)]

    def __getitem__(self, column: str) -> Any:
        return self.mapping[column]

    def __iter__(self) -> Iterator[str]:
        return iter(self.mapping)

    def __len__(self) -> int:
        return len(self.mapping)

    __eq__ = Mapping.__eq__  # the values alone, as any mapping compares

    def __repr__(self) -> str:
        expires = self.expires_at
        extra = "" if expires is None else f", expires_at={expires!r}"
        return f"Row({dict(self.mapping)!r}, version={self.version}{extra})"

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy of the values."""
        return dict(self.mapping)


@dataclass(frozen=True)
class Page:
    """One page of a paginated scan; ``next_token`` is None when the scan is done."""

    rows: list[Row] = field(default_factory=list)
    next_token: str | None = None
