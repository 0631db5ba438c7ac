"""Modal screens of the dashboard: row editor and delete confirmation."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

import spi
from kvctl.render import word


class EditRowScreen(ModalScreen[dict[str, str] | None]):
    """Edit one row's cells (key cells only for a new row); dismisses with the
    changed texts, or None when cancelled."""

    BINDINGS = [("escape", "cancel", "Cancel")]

    def __init__(self, spec: spi.TableSpec, row: spi.Row | None) -> None:
        super().__init__()
        self._spec = spec
        self._row = row

    def compose(self) -> ComposeResult:
        title = "New row" if self._row is None else f"Edit row (version {self._row.version})"
        with VerticalScroll(id="editor"):
            yield Label(title, id="editor-title")
            for f in self._spec.fields:
                is_key = self._spec.is_key(f.name)
                value = "" if self._row is None else word(self._row[f.name])
                with Horizontal(classes="field"):
                    yield Label(f"{f.name} ({f.type}{', key' if is_key else ''})", classes="field-label")
                    yield Input(
                        value=value,
                        id=f"field-{f.name}",
                        disabled=is_key and self._row is not None,
                        placeholder="null" if not is_key else "required",
                    )
            with Horizontal(id="editor-buttons"):
                yield Button("Save", variant="primary", id="save")
                yield Button("Cancel", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Save or cancel."""
        if event.button.id == "cancel":
            self.dismiss(None)
            return
        edits: dict[str, str] = {}
        for f in self._spec.fields:
            text = self.query_one(f"#field-{f.name}", Input).value
            original = None if self._row is None else word(self._row[f.name])
            if self._row is None:
                if text != "" or self._spec.is_key(f.name):
                    edits[f.name] = text
            elif text != original:
                edits[f.name] = text
        self.dismiss(edits)

    def action_cancel(self) -> None:
        """Close without saving."""
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question."""

    BINDINGS = [("escape", "no", "No"), ("y", "yes", "Yes"), ("n", "no", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self._question = question

    def compose(self) -> ComposeResult:
        with Grid(id="confirm"):
            yield Label(self._question, id="confirm-question")
            yield Button("Yes", variant="error", id="yes")
            yield Button("No", variant="primary", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Answer."""
        self.dismiss(event.button.id == "yes")

    def action_yes(self) -> None:
        """Answer yes."""
        self.dismiss(True)

    def action_no(self) -> None:
        """Answer no."""
        self.dismiss(False)


__all__ = ["ConfirmScreen", "EditRowScreen"]
