"""Rows and scan pages as the SPI returns them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


class Row(Mapping[str, Any]):
    """A read-only mapping column → value, with the row's ``version``."""

    __slots__ = ("_values", "version")

    def __init__(self, values: Mapping[str, Any], version: int) -> None:
        self._values = dict(values)
        self.version = version

    @classmethod
    def adopt(cls, values: dict[str, Any], version: int) -> Row:
        """A row that takes ownership of ``values`` (no copy: the caller must not keep it)."""
        row = cls.__new__(cls)
        row._values = values
        row.version = version
        return row

    def __getitem__(self, column: str) -> Any:
        return self._values[column]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Row({self._values!r}, version={self.version})"

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy of the values."""
        return dict(self._values)


@dataclass(frozen=True)
class Page:
    """One page of a paginated scan; ``next_token`` is None when the scan is done."""

    rows: list[Row] = field(default_factory=list)
    next_token: str | None = None
