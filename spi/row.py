"""Rows and scan pages as the SPI returns them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from spi.codec import from_micros, to_micros


class Row(Mapping[str, Any]):
    """A read-only mapping column → value, with the row's ``version`` and
    :attr:`expires_at`."""

    # ``_expires`` (microseconds since the epoch) is set only on rows that expire:
    # rows that never do skip a store, and the datetime is made only when asked for.
    __slots__ = ("_expires", "_values", "version")

    def __init__(self, values: Mapping[str, Any], version: int, expires_at: datetime | None = None) -> None:
        self._values = dict(values)
        self.version = version
        if expires_at is not None:
            self._expires = to_micros(expires_at)

    @classmethod
    def adopt(cls, values: dict[str, Any], version: int, expires: int | None = None) -> Row:
        """A row that takes ownership of ``values`` (no copy: the caller must not keep
        it); ``expires`` is its expiry in microseconds since the epoch (None: never)."""
        row = cls.__new__(cls)
        row._values = values
        row.version = version
        if expires is not None:
            row._expires = expires
        return row

    @property
    def expires_at(self) -> datetime | None:
        """When the row expires (an aware UTC datetime), or None when it never does."""
        try:
            return from_micros(self._expires)
        except AttributeError:
            return None

    @property
    def expires(self) -> int | None:
        """:attr:`expires_at` in microseconds since the epoch (None: never)."""
        try:
            return self._expires
        except AttributeError:
            return None

    def __getitem__(self, column: str) -> Any:
        return self._values[column]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        expires = self.expires_at
        extra = "" if expires is None else f", expires_at={expires!r}"
        return f"Row({self._values!r}, version={self.version}{extra})"

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy of the values."""
        return dict(self._values)


@dataclass(frozen=True)
class Page:
    """One page of a paginated scan; ``next_token`` is None when the scan is done."""

    rows: list[Row] = field(default_factory=list)
    next_token: str | None = None
