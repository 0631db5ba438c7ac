"""The add and edit form, typed by the table's spec.

Each column gets an input checked as it is typed (values as on the command line:
numbers, ``true``/``false``, ISO 8601 timestamps, ``b64:`` bytes); bool columns a
true/false choice; nullable columns a ``null`` box. The form saves itself, in a worker:
an insert for a new row, an update at the version shown for an edit. When the save
fails the form stays open with everything typed and the error; when the row changed
meanwhile it offers to reload it (keeping the fields the user edited). A value's
control characters show as ``\\xNN`` text (:func:`kvctl.render.visible`); only edited
fields are saved, so a field left as shown keeps its value. Keys: see
:mod:`kvctl.tui.screens.forms` (first field focused, ``ctrl+s``, Enter, ``esc``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Select

import spi
from kvctl.errors import message_for
from kvctl.render import visible, word
from kvctl.tui.browser import insert_row, key_of, key_words, update_row
from kvctl.tui.screens.dialogs import ConfirmScreen
from kvctl.tui.screens.forms import FormScreen
from kvctl.tui.session import Session, error_text
from kvctl.tui.widgets.dialog import Dialog, ErrorLine, field_row
from spi.textvalues import parse_word, require_key_text

FORM_CHROME = 10
"""Lines of the row form that are not its fields: title, keys, buttons, borders and
one line of error."""
LABEL_WIDTH = 30
"""Columns of a field's label at most (a longer one is cut with …)."""


@dataclass(frozen=True)
class Saved:
    """A saved row: its key, the row as shown before (None: added) and as stored now."""

    key: tuple[Any, ...]
    before: spi.Row | None
    after: dict[str, Any]
    version: int


def field_value(spec: spi.TableSpec, column: str, text: str, null: bool) -> Any:
    """The typed value of one form field (raises :class:`spi.KvError` for a bad one).
    An empty field is null, except in a string column; a key column may not be empty."""
    require_key_text(spec, column, text)
    if null:
        return None
    if text == "" and spec.type_of(column) is not spi.FieldType.STRING:
        return parse_word(spec, column, "null")
    return parse_word(spec, column, text)


class RowFormScreen(FormScreen[Saved | None]):
    """Add a row (``row`` None) or edit one; dismisses with :class:`Saved`, or None."""

    def __init__(self, session: Session, spec: spi.TableSpec, row: spi.Row | None) -> None:
        super().__init__()
        self._session = session
        self._spec = spec
        self._row = row
        self._saving = False
        self._ready = False

    def on_mount(self) -> None:
        """Changes from now on are the user's."""
        self._fit(self.app.size.height)
        self.call_after_refresh(setattr, self, "_ready", True)

    def on_resize(self, event: events.Resize) -> None:
        """Keep title, keys and buttons on screen: the fields scroll."""
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        self.query_one("#form-fields").styles.max_height = max(5, int(height * 0.9) - FORM_CHROME)

    def _title(self) -> str:
        if self._row is None:
            return f"New row in {self._spec.name}"
        return f"Edit {self._spec.name}: {key_words(self._spec, self._row)} (version {self._row.version})"

    def fields(self) -> list[Widget]:
        """One input or choice per column, in the spec's order."""
        return [self.query_one(f"#field-{c}") for c in self._spec.columns]

    def compose_form(self) -> ComposeResult:
        """One line per column: its label, an input (or a true/false choice) and a null
        box; under it the field's error line."""
        spec, row = self._spec, self._row
        labels = {f.name: f"{f.name} ({f.type}{', key' if spec.is_key(f.name) else ''})" for f in spec.fields}
        width = min(LABEL_WIDTH, max(map(len, labels.values())) + 1)
        with Dialog(classes="-wide", id="form"):
            yield Label(self._title(), classes="title", id="form-title")
            with VerticalScroll(id="form-fields"):
                for f in spec.fields:
                    is_key = spec.is_key(f.name)
                    value = None if row is None else row.get(f.name)
                    locked = is_key and row is not None
                    control: Widget
                    if f.type is spi.FieldType.BOOL:
                        control = Select(
                            [("true", True), ("false", False)],
                            value=bool(value) if value is not None else False,
                            allow_blank=False,
                            id=f"field-{f.name}",
                            disabled=locked,
                        )
                    else:
                        control = Input(
                            value="" if value is None else visible(word(value)),
                            placeholder="required" if is_key else f.type.impl.placeholder,
                            id=f"field-{f.name}",
                            disabled=locked,
                        )
                    null = () if is_key else (Checkbox("null", value=value is None, id=f"null-{f.name}"),)
                    yield field_row(labels[f.name], control, *null, width=width)
                    yield ErrorLine(id=f"error-{f.name}")
            yield ErrorLine(id="form-error")
            yield self.keys_hint()
            with Horizontal(classes="buttons"):
                yield Button("Save", variant="primary", id="save")
                yield Button("Reload", variant="warning", id="reload", classes="-hidden")
                yield Button("Cancel", id="cancel")

    # ------------------------------------------------------------------ values
    def _text(self, column: str) -> str:
        widget = self.query_one(f"#field-{column}")
        if isinstance(widget, Select):
            return "true" if widget.value is True else "false"
        assert isinstance(widget, Input)
        return widget.value

    def _null(self, column: str) -> bool:
        return bool(self.query(f"#null-{column}") and self.query_one(f"#null-{column}", Checkbox).value)

    def _original(self, column: str) -> str | None:
        """The field as it was filled in (None for a new row)."""
        if self._row is None:
            return None
        value = self._row.get(column)
        if self._spec.type_of(column) is spi.FieldType.BOOL:
            return "true" if value else "false"
        return "" if value is None else visible(word(value))

    def _edited(self, column: str) -> bool:
        if self._row is None:
            return self._text(column) != "" if self._spec.is_key(column) else not self._null(column)
        return self._text(column) != self._original(column) or self._null(column) != (self._row.get(column) is None)

    def _check(self, column: str, *, scroll: bool = True) -> Any:
        """The field's value; shows (``scroll``: into view) or clears its error."""
        error = self.query_one(f"#error-{column}", ErrorLine)
        try:
            value = field_value(self._spec, column, self._text(column), self._null(column))
        except (spi.KvError, ValueError) as exc:
            error.show(message_for(exc), scroll=scroll)
            raise
        error.show("")
        return value

    @on(Input.Changed)
    def field_changed(self, event: Input.Changed) -> None:
        """Typing in a field unticks its null box and checks it."""
        column = (event.input.id or "").removeprefix("field-")
        if not self._spec.has_column(column):
            return
        if event.value and self.query(f"#null-{column}"):
            self.query_one(f"#null-{column}", Checkbox).value = False
        if event.value or self._spec.is_key(column):
            try:
                self._check(column)
            except (spi.KvError, ValueError):
                return
        else:
            self.query_one(f"#error-{column}", ErrorLine).show("")

    @on(Select.Changed)
    def choice_changed(self, event: Select.Changed) -> None:
        """Picking true or false unticks the null box."""
        column = (event.select.id or "").removeprefix("field-")
        if self.query(f"#null-{column}") and self._ready:
            self.query_one(f"#null-{column}", Checkbox).value = False

    def _values(self) -> tuple[dict[str, Any], str | None]:
        """Every field typed, and the first bad field's column (None: none; each bad
        field shows its error)."""
        values: dict[str, Any] = {}
        bad: list[str] = []
        for column in self._spec.columns:
            try:
                values[column] = self._check(column, scroll=False)
            except (spi.KvError, ValueError):
                bad.append(column)
        return values, next(iter(bad), None)

    # ------------------------------------------------------------------ saving
    @on(Button.Pressed, "#save")
    def action_save(self) -> None:
        """Check every field and save (in a worker); the form stays open until saved."""
        if self._saving:
            return
        values, bad = self._values()
        if bad is not None:  # the first bad field focused, its error in view
            self._show_error("fix the fields marked above; nothing was saved")
            self.set_focus(self.query_one(f"#field-{bad}"))
            self.query_one(f"#error-{bad}", ErrorLine).reveal()
            return
        if self._row is not None:
            values = {c: v for c, v in values.items() if not self._spec.is_key(c) and self._edited(c)}
            if not values:
                self.notify("nothing changed")
                self.dismiss(None)
                return
        else:
            values = {c: v for c, v in values.items() if v is not None or self._spec.is_key(c)}
        self._saving = True
        self.query_one("#form").loading = True
        self._save(values)

    @work(thread=True, exclusive=True, group="save")
    def _save(self, values: dict[str, Any]) -> None:
        spec, row = self._spec, self._row
        try:
            table = self._session.table(spec.name)
            if row is None:
                version = insert_row(table, values)
                after = {c: values.get(c) for c in spec.columns}
            else:
                version = update_row(table, spec, row, values)
                after = {**row.to_dict(), **values}
        except Exception as exc:
            self.app.call_from_thread(self._failed, exc)
            return
        saved = Saved(key_of(spec, after), row, after, version)
        self.app.call_from_thread(self.dismiss, saved)

    def _failed(self, exc: Exception) -> None:
        self._saving = False
        self.query_one("#form").loading = False
        if isinstance(exc, spi.VersionMismatchError):
            self._show_error(
                f"not saved: the row changed since it was shown ({exc}). Reload to see it; your edits are kept."
            )
            self.query_one("#reload").remove_class("-hidden")
        elif isinstance(exc, spi.RowNotFoundError):
            self._show_error("not saved: the row was deleted meanwhile")
        else:
            self._show_error(f"not saved: {error_text(exc)}")

    def _show_error(self, text: str) -> None:
        self.query_one("#form-error", ErrorLine).show(text)
        self.notify(text, severity="error")

    # ------------------------------------------------------------------ reload
    @on(Button.Pressed, "#reload")
    def reload(self) -> None:
        """Read the row as stored now (in a worker)."""
        assert self._row is not None
        self._reload(key_of(self._spec, self._row))

    @work(thread=True, exclusive=True, group="save")
    def _reload(self, key: tuple[Any, ...]) -> None:
        try:
            row = self._session.table(self._spec.name).read(key)
        except Exception as exc:
            self.app.call_from_thread(self._show_error, f"cannot reload: {error_text(exc)}")
            return
        self.app.call_from_thread(self._reloaded, row)

    def _reloaded(self, row: spi.Row | None) -> None:
        if row is None:
            self._show_error("the row was deleted meanwhile; nothing to reload")
            return
        kept = {c for c in self._spec.columns if not self._spec.is_key(c) and self._edited(c)}
        self._row = row
        for column in self._spec.columns:
            if column in kept or self._spec.is_key(column):
                continue
            widget = self.query_one(f"#field-{column}")
            value = row.get(column)
            if isinstance(widget, Select):
                widget.value = bool(value)
            elif isinstance(widget, Input):
                widget.value = "" if value is None else visible(word(value))
            if self.query(f"#null-{column}"):
                self.query_one(f"#null-{column}", Checkbox).value = value is None
        self.query_one("#form-title", Label).update(self._title())
        self.query_one("#reload").add_class("-hidden")
        self.query_one("#form-error", ErrorLine).show(
            f"reloaded version {row.version}" + (f"; your edits kept: {', '.join(sorted(kept))}" if kept else "")
        )

    # ------------------------------------------------------------------ leaving
    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Close; with unsaved edits, ask first (focus on No)."""
        if not any(self._edited(c) for c in self._spec.columns if not (self._row and self._spec.is_key(c))):
            self.dismiss(None)
            return

        def answer(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)

        self.app.push_screen(ConfirmScreen("Discard your changes?", "Discard"), answer)
