"""Table management from the command palette: create, alter and drop a table.

The dialogs take what ``kvctl table create/alter`` take (``col:type`` fields, a key
list, indexes) and build the spec with the same code (:mod:`kvctl.specs`). Each does
its write in a worker and stays open with the error when it fails; drop asks for the
table's name first. Keys: see :mod:`kvctl.tui.screens.forms` (first field focused,
``ctrl+s``, Enter, ``esc``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Static
from textual.widgets.button import ButtonVariant

import spi
from kvctl import specs
from kvctl.durations import describe_seconds, parse_ttl
from kvctl.tui.screens.forms import FormScreen
from kvctl.tui.session import Session, error_text
from kvctl.tui.widgets.dialog import Dialog, ErrorLine, field_row

LABEL = 14
"""Columns of a field's label."""


def words(text: str) -> list[str]:
    """A list typed with spaces and/or commas → its items."""
    return [w for w in text.replace(",", " ").split() if w]


class _AdminDialog(FormScreen[str | None]):
    """A dialog that runs one admin call in a worker and dismisses with the table name."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self._session = session

    def _buttons(self, label: str, variant: ButtonVariant = "primary") -> ComposeResult:
        yield ErrorLine(id="admin-error")
        yield self.keys_hint()
        with Horizontal(classes="buttons"):
            yield Button(label, variant=variant, id="run")
            yield Button("Cancel", id="cancel")

    def _fail(self, text: str) -> None:
        self.query_one("#admin-error", ErrorLine).show(text)

    def _start(self, name: str, call: Callable[[Any], None]) -> None:
        self.query_one(Dialog).loading = True
        self._run(name, call)

    @work(thread=True, exclusive=True, group="admin")
    def _run(self, name: str, call: Callable[[Any], None]) -> None:
        try:
            call(self._session.provider.admin)
        except Exception as exc:
            self.app.call_from_thread(self._failed, error_text(exc))
            return
        self._session.counts.forget(name)
        self.app.call_from_thread(self.dismiss, name)

    def _failed(self, text: str) -> None:
        self.query_one(Dialog).loading = False
        self._fail(text)
        self.notify(text, severity="error")

    def fields(self) -> list[Widget]:
        """The dialog's inputs, top to bottom (Enter passes the boxes: space ticks them)."""
        return list(self.query(Input))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Close; nothing was changed."""
        self.dismiss(None)


class CreateTableScreen(_AdminDialog):
    """A new table from fields, a key and indexes (as ``kvctl table create --field``)."""

    def compose_form(self) -> ComposeResult:
        """Name, fields, key, indexes, ttl and the change-feed box."""
        with Dialog(classes="-wide"):
            yield Label("Create a table", classes="title")
            yield field_row("name", Input(placeholder="e.g. orders", id="create-name"), width=LABEL)
            fields = Input(placeholder="col:type ...  e.g. id:long name:string total:double", id="create-fields")
            yield field_row("fields", fields, width=LABEL)
            yield field_row("key", Input(placeholder="in order  e.g. region,id", id="create-pk"), width=LABEL)
            yield field_row("indexes", Input(placeholder="optional  e.g. status", id="create-indexes"), width=LABEL)
            yield field_row("expire", Input(placeholder="optional  e.g. 90s 15m 2h 7d", id="create-ttl"), width=LABEL)
            feed = Checkbox("record a change feed (live view, kvctl watch)", id="create-changes")
            yield field_row("feed", feed, width=LABEL)
            yield Static("types: int long float double string bytes bool timestamp", classes="hint")
            yield from self._buttons("Create")

    @on(Button.Pressed, "#run")
    def action_save(self) -> None:
        """Build the spec (errors shown at once) and create the table."""
        name = self.query_one("#create-name", Input).value.strip()
        fields = words(self.query_one("#create-fields", Input).value)
        pk = ",".join(words(self.query_one("#create-pk", Input).value)) or None
        indexes = words(self.query_one("#create-indexes", Input).value)
        ttl = self.query_one("#create-ttl", Input).value.strip()
        try:
            spec = specs.from_options(name, fields, pk, indexes)
            spec = spec.with_changes(self.query_one("#create-changes", Checkbox).value)
            if ttl:
                spec = spec.with_ttl(parse_ttl(ttl, "ttl"))
        except Exception as exc:
            self._fail(error_text(exc))
            return
        self._start(name, lambda admin: admin.create(spec))


class AlterTableScreen(_AdminDialog):
    """Add fields and indexes to a table, or drop indexes (as ``kvctl table alter``)."""

    def __init__(self, session: Session, spec: spi.TableSpec) -> None:
        super().__init__(session)
        self._spec = spec

    def compose_form(self) -> ComposeResult:
        """The current spec, then fields and indexes to add, indexes to drop, ttl and feed."""
        spec = self._spec
        with Dialog(classes="-wide"):
            yield Label(f"Alter table {spec.name}", classes="title")
            yield Static(
                f"fields: {' '.join(f'{f.name}:{f.type}' for f in spec.fields)}\n"
                f"key: {', '.join(spec.primary_key)}    indexes: {', '.join(spec.indexes) or 'none'}",
                classes="hint",
            )
            yield field_row("add fields", Input(placeholder="col:type ...", id="alter-fields"), width=LABEL)
            yield field_row("add indexes", Input(placeholder="col ...", id="alter-add-indexes"), width=LABEL)
            yield field_row("drop indexes", Input(placeholder="col ...", id="alter-drop-indexes"), width=LABEL)
            ttl = "" if spec.ttl is None else describe_seconds(spec.ttl)
            expire = Input(value=ttl, placeholder="e.g. 2h (empty: never)", id="alter-ttl")
            yield field_row("expire", expire, width=LABEL)
            feed = Checkbox("record a change feed", value=spec.changes, id="alter-changes")
            yield field_row("feed", feed, width=LABEL)
            yield from self._buttons("Alter")

    @on(Button.Pressed, "#run")
    def action_save(self) -> None:
        """Build the new spec and apply it (an incompatible change is refused, unchanged)."""
        add_fields = words(self.query_one("#alter-fields", Input).value)
        add_indexes = words(self.query_one("#alter-add-indexes", Input).value)
        drop_indexes = words(self.query_one("#alter-drop-indexes", Input).value)
        ttl = self.query_one("#alter-ttl", Input).value.strip()
        try:
            new = specs.altered(self._spec, add_fields, add_indexes, drop_indexes)
            new = new.with_changes(self.query_one("#alter-changes", Checkbox).value)
            new = new.with_ttl(parse_ttl(ttl, "ttl") if ttl and ttl.lower() != "none" else None)
        except Exception as exc:
            self._fail(error_text(exc))
            return
        if new == self._spec:
            self._fail("nothing to change: add fields or indexes, drop indexes, or change the feed or the ttl")
            return
        self._start(new.name, lambda admin: admin.create_or_update(new))


class DropTableScreen(_AdminDialog):
    """Drop a table and its rows, once its name is typed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Drop", key_display="^s", tooltip="Drop the table (once its name is typed)"),
    ]

    def __init__(self, session: Session, name: str) -> None:
        super().__init__(session)
        self._table = name

    def compose_form(self) -> ComposeResult:
        """The question and the name to type."""
        with Dialog(classes="-danger"):
            yield Label(f"Drop table {self._table}?", classes="title")
            yield Static("This deletes the table and all its rows. Type its name to confirm.", classes="hint")
            yield Input(placeholder=self._table, id="drop-name")
            yield from self._buttons("Drop", "error")

    def on_mount(self) -> None:
        """Drop stays disabled until the name is typed."""
        self.query_one("#run", Button).disabled = True

    @on(Input.Changed, "#drop-name")
    def typed(self, event: Input.Changed) -> None:
        """Enable Drop when the typed name matches."""
        self.query_one("#run", Button).disabled = event.value != self._table

    @on(Button.Pressed, "#run")
    def action_save(self) -> None:
        """Drop the table, if its name was typed."""
        if self.query_one("#drop-name", Input).value != self._table:
            self._fail(f"type {self._table} to drop it")
            return
        name = self._table
        self._start(name, lambda admin: admin.drop(name))
