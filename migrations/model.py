"""What a migration is: a version, a description, a checksum and its steps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import spi
from spi.errors import KvError


class MigrationFileError(KvError):
    """A migrations folder or file is malformed (nothing was applied)."""


class MigrationStateError(KvError):
    """The store's migration record disagrees with the files, or another process
    is applying the same migration."""


@dataclass(frozen=True)
class Step:
    """One atomic SPI call of a migration.

    ``kind`` is ``create_or_update`` (with ``spec``), ``drop`` (with ``table``; a
    missing table is fine) or ``python`` (with ``run(provider)``). Every kind is
    safe to repeat, so a migration that failed part-way can simply be re-run.
    """

    kind: str
    spec: spi.TableSpec | None = None
    table: str | None = None
    run: Callable[[Any], None] | None = None

    def describe(self) -> str:
        """A short account of the step for status output and errors."""
        if self.kind == "create_or_update" and self.spec is not None:
            return f"create_or_update {self.spec.name}"
        if self.kind == "drop":
            return f"drop {self.table}"
        return f"python {getattr(self.run, '__name__', 'step')}"

    def apply(self, provider: Any) -> None:
        """Run the step against ``provider``."""
        if self.kind == "create_or_update":
            provider.admin.create_or_update(self.spec)
        elif self.kind == "drop":
            provider.admin.drop(self.table, missing_ok=True)
        elif self.run is not None:
            self.run(provider)


@dataclass(frozen=True)
class Migration:
    """A versioned list of steps loaded from one file."""

    version: int
    description: str
    checksum: str
    steps: tuple[Step, ...]
    source: str
