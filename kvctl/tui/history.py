"""Filter history: the where-clauses applied to each table, newest last, kept across
runs in a small JSON file (like psql's history). A file that cannot be read or
written only loses the history; it never stops the dashboard."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

KEEP = 50
"""Where-clauses kept per table."""


class FilterHistory:
    """Where-clauses by table; ``path`` None keeps them for this run only."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._entries: dict[str, list[str]] = {}
        if path is not None:
            with contextlib.suppress(OSError, ValueError):
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict):
                    self._entries = {
                        str(t): [str(w) for w in ws if isinstance(w, str)][-KEEP:]
                        for t, ws in data.items()
                        if isinstance(ws, list)
                    }

    def entries(self, table: str) -> list[str]:
        """The where-clauses of ``table``, oldest first."""
        return list(self._entries.get(table, []))

    def add(self, table: str, where: str) -> None:
        """Remember ``where`` as the newest clause of ``table`` (once) and save."""
        where = where.strip()
        if not where:
            return
        entries = [w for w in self._entries.get(table, []) if w != where]
        entries.append(where)
        self._entries[table] = entries[-KEEP:]
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".history-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self._entries, fh, ensure_ascii=False, indent=1)
            os.replace(tmp, self.path)


class HistoryCursor:
    """Walks a table's history with up/down, as a shell does: up goes to older
    clauses, down back towards the text being typed."""

    def __init__(self, entries: list[str], typed: str) -> None:
        self._entries = entries
        self._typed = typed
        self._index = len(entries)

    def older(self) -> str | None:
        """The previous (older) clause, or None at the oldest."""
        if self._index == 0:
            return None
        self._index -= 1
        return self._entries[self._index]

    def newer(self) -> str | None:
        """The next (newer) clause, the typed text after the newest, None past it."""
        if self._index >= len(self._entries):
            return None
        self._index += 1
        return self._typed if self._index == len(self._entries) else self._entries[self._index]


__all__ = ["KEEP", "FilterHistory", "HistoryCursor"]
