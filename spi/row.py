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

    ``Row(values, version, expires_at=None)`` keeps ``values`` as given (no copy: do
    not change it afterwards) as :attr:`mapping`; ``expires_at`` is an aware datetime
    or microseconds since the epoch. A row is a struct outside the garbage collector (its values are
    plain data, so it can never be part of a cycle): scans make one per row, and
    tracking each one cost about a tenth of a microsecond."""

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
        return from_micros(expires) if type(expires) is int else expires  # type: ignore[return-value]

    @property
    def expires(self) -> int | None:
        """:attr:`expires_at` in microseconds since the epoch (None: never)."""
        expires = self._expires
        return to_micros(expires) if isinstance(expires, datetime) else expires

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
