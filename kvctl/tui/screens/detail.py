"""Read-only views: one row with every column in full (``enter``), and a table's spec
(``s``)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Label, Static

import spi
from kvctl.durations import describe_seconds
from kvctl.output import dumps
from kvctl.render import json_row, visible, word
from kvctl.tui.browser import key_words
from kvctl.tui.widgets.footer import KeysFooter


def row_json(row: spi.Row) -> str:
    """A row as one JSON object (bytes base64, timestamps ISO 8601), as ``kvctl get -o json``."""
    return dumps(json_row(row))


def spec_json(spec: spi.TableSpec) -> str:
    """A spec as ``kvctl table describe -o json`` prints it (a ``--spec`` file)."""
    import json

    return json.dumps(spec.to_dict(), ensure_ascii=False, indent=2)


def feed_text(spec: spi.TableSpec) -> str:
    """The change feed of a table: on, off, or ``-`` while specs do not record it."""
    changes = getattr(spec, "changes", None)
    return "-" if changes is None else ("on" if changes else "off")


def ttl_text(spec: spi.TableSpec) -> str:
    """The row expiry of a table (``7d``, ``2h``, ``90s``), or ``-`` (none)."""
    return "-" if spec.ttl is None else describe_seconds(spec.ttl)


class RowDetailScreen(Screen[str | None]):
    """Every column of one row, long values wrapped. Dismisses with ``"edit"`` when the
    user asks to edit it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", key_display="esc"),
        Binding("e", "edit", "Edit", tooltip="Edit this row"),
        Binding("c", "copy", "Copy", tooltip="Copy the row as JSON"),
    ]

    def __init__(self, spec: spi.TableSpec, row: spi.Row) -> None:
        super().__init__()
        self._spec = spec
        self._row = row

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="detail"):
            yield Label(
                f"{self._spec.name}: {key_words(self._spec, self._row)}  (version {self._row.version})",
                classes="title",
            )
            for f in self._spec.fields:
                value: Any = self._row.get(f.name)
                kind = f"{f.type}" + (", key" if self._spec.is_key(f.name) else "")
                kind += ", indexed" if self._spec.is_indexed(f.name) else ""
                yield Label(Text.assemble((f.name, "bold"), f"  {kind}"), classes="detail-name")
                text = Text(visible(word(value)), style="dim" if value is None else "")
                yield Static(text, classes="detail-value", id=f"value-{f.name}")
        yield KeysFooter()

    def action_back(self) -> None:
        """Back to the rows."""
        self.dismiss(None)

    def action_edit(self) -> None:
        """Edit this row (the rows screen opens the form)."""
        self.dismiss("edit")

    def action_copy(self) -> None:
        """Copy the row as JSON."""
        self.app.copy_to_clipboard(row_json(self._row))
        self.notify(f"copied {key_words(self._spec, self._row)} as JSON")


class SpecScreen(Screen[None]):
    """A table's columns, key, indexes, change feed and ttl, and its ``--spec`` JSON."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", key_display="esc"),
        Binding("c", "copy", "Copy", tooltip="Copy the spec as JSON (a --spec file)"),
    ]

    def __init__(self, spec: spi.TableSpec) -> None:
        super().__init__()
        self._spec = spec

    def compose(self) -> ComposeResult:
        spec = self._spec
        yield Header()
        with VerticalScroll(id="spec"):
            yield Label(f"Table {spec.name}", classes="title")
            fields: DataTable[Any] = DataTable(id="spec-fields", cursor_type="none", show_cursor=False)
            fields.add_columns("column", "type", "key", "indexed")
            for f in spec.fields:
                key = str(spec.primary_key.index(f.name) + 1) if spec.is_key(f.name) else ""
                fields.add_row(f.name, str(f.type), key, "yes" if spec.is_indexed(f.name) else "")
            yield fields
            yield Static(
                f"primary key: {', '.join(spec.primary_key)}\n"
                f"indexes: {', '.join(spec.indexes) or 'none'}\n"
                f"change feed: {feed_text(spec)}    ttl: {ttl_text(spec)}",
                id="spec-summary",
            )
            yield Label("--spec JSON (kvctl table describe -o json)", classes="subtitle")
            yield Static(spec_json(spec), id="spec-json")
        yield KeysFooter()

    def action_back(self) -> None:
        """Back."""
        self.dismiss(None)

    def action_copy(self) -> None:
        """Copy the spec as JSON."""
        self.app.copy_to_clipboard(spec_json(self._spec))
        self.notify(f"copied the spec of {self._spec.name} as JSON")
