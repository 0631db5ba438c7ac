"""How the reference model stores a table: a spec and a plain list of records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spi.spec import TableSpec


@dataclass(frozen=True)
class Record:
    """One stored row: every column's value and the row's version.

    Records are never changed in place (a write stores a new one), so copying a
    table is copying its list.
    """

    values: dict[str, Any]
    version: int

    def key(self, spec: TableSpec) -> tuple[Any, ...]:
        """The row's key tuple, in key order."""
        return key_of(spec, self.values)


def key_of(spec: TableSpec, values: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key tuple of a checked row, in key order."""
    return tuple(values[k] for k in spec.primary_key)


@dataclass
class StoredTable:
    """A committed table: its spec, its rows in no particular order, and how many
    transactions have committed to it (to detect interleaved transactions)."""

    spec: TableSpec
    rows: list[Record] = field(default_factory=list)
    commits: int = 0
