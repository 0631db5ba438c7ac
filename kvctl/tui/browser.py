"""The dashboard's data access: one table's pages, filter and edits (no UI code).

Every call is a short auto-commit operation, so the dashboard holds nothing while
idle (a RocksDB path stays usable by other processes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import spi
from spi.textvalues import parse_word, require_key_text

PAGE_SIZE = 100


@dataclass
class PageView:
    """What the rows view shows: the rows of one page and where it is."""

    columns: list[str]
    rows: list[spi.Row]
    page_number: int
    has_next: bool


@dataclass
class TableBrowser:
    """Pages through one table with an optional where-clause; edits rows."""

    provider: Any
    name: str
    where_text: str = ""
    page_size: int = PAGE_SIZE
    _tokens: list[str | None] = field(default_factory=lambda: [None])
    _next: str | None = None

    @property
    def spec(self) -> spi.TableSpec:
        """The table's current spec."""
        return self.provider.admin.get_spec(self.name)  # type: ignore[no-any-return]

    def set_where(self, text: str) -> None:
        """Filter with a where-clause (validated now; errors propagate) and go to page 1."""
        if text.strip():
            spi.parse_where(text, self.spec)
        self.where_text = text.strip()
        self._tokens = [None]

    def _where(self) -> spi.Expr | None:
        return spi.parse_where(self.where_text, self.spec) if self.where_text else None

    def current(self) -> PageView:
        """Read the current page."""
        spec = self.spec
        page = self.provider.table(self.name).scan_page(
            where=self._where(), limit=self.page_size, after=self._tokens[-1]
        )
        self._next = page.next_token
        return PageView(list(spec.columns), page.rows, len(self._tokens), page.next_token is not None)

    def next_page(self) -> PageView:
        """Move one page forward (stays on the last page)."""
        if self._next is not None:
            self._tokens.append(self._next)
        return self.current()

    def previous_page(self) -> PageView:
        """Move one page back (stays on the first page)."""
        if len(self._tokens) > 1:
            self._tokens.pop()
        return self.current()

    def count(self) -> int:
        """Rows matching the current filter."""
        return int(self.provider.table(self.name).count(where=self._where()))

    def key_of(self, row: spi.Row) -> dict[str, Any]:
        """The key of a shown row."""
        return {k: row[k] for k in self.spec.primary_key}

    def save(self, row: spi.Row | None, edits: dict[str, str]) -> int:
        """Write edited cell texts (words as on the command line) for a new or
        existing row; only the version shown is overwritten (conditional update)."""
        spec = self.spec
        if row is None:
            for column in spec.primary_key:
                require_key_text(spec, column, edits.get(column, ""))
        values = {c: parse_word(spec, c, text) for c, text in edits.items()}
        table = self.provider.table(self.name)
        if row is None:
            return int(table.insert(values))
        changes = {c: v for c, v in values.items() if not spec.is_key(c)}
        return int(table.update(self.key_of(row), changes, version=row.version))

    def delete(self, row: spi.Row) -> bool:
        """Delete a shown row if it is still at the version shown."""
        return bool(self.provider.table(self.name).delete(self.key_of(row), version=row.version))


__all__ = ["PAGE_SIZE", "PageView", "TableBrowser"]
