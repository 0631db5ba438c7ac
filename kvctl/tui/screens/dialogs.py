"""Small modal dialogs: yes/no (focus on No), a one-line prompt checked as it is
submitted, the order picker and the export dialog."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, RadioButton, RadioSet, Static
from textual.widgets.option_list import Option

import spi
from kvctl.tui.browser import Order
from kvctl.tui.export import FORMATS, format_for
from kvctl.tui.session import error_text
from kvctl.tui.widgets.dialog import Dialog, ErrorLine

T = TypeVar("T")


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question; the focus starts on No, so a stray Enter changes nothing."""

    AUTO_FOCUS = "#no"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "answer(False)", "No"),
        Binding("n", "answer(False)", "No", show=False),
        Binding("y", "answer(True)", "Yes", show=False),
        Binding("left,right", "app.focus_next", "Switch", show=False),
    ]

    def __init__(self, question: str, yes: str = "Yes") -> None:
        super().__init__()
        self._question = question
        self._yes = yes

    def compose(self) -> ComposeResult:
        with Dialog(classes="-danger"):
            yield Static(self._question, classes="question")
            with Horizontal(classes="buttons"):
                yield Button(self._yes, variant="error", id="yes")
                yield Button("No", variant="primary", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Answer with the button."""
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        """Answer by key."""
        self.dismiss(yes)


class PromptScreen(ModalScreen[T | None], Generic[T]):
    """One line of input; on Enter ``check(text)`` gives the result, or raises and the
    error is shown (the dialog stays open with the text)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, check: Callable[[str], T], *, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self._title = title
        self._check = check
        self._placeholder = placeholder
        self._value = value

    def compose(self) -> ComposeResult:
        with Dialog():
            yield Label(self._title, classes="title")
            yield Input(value=self._value, placeholder=self._placeholder, id="prompt")
            yield ErrorLine(id="prompt-error")

    @on(Input.Submitted, "#prompt")
    def submitted(self, event: Input.Submitted) -> None:
        """Check the text; dismiss with the result or show why not."""
        try:
            result = self._check(event.value)
        except Exception as exc:
            self.query_one("#prompt-error", ErrorLine).show(error_text(exc))
            return
        self.dismiss(result)

    def action_cancel(self) -> None:
        """Close without a result."""
        self.dismiss(None)


def orders(spec: spi.TableSpec) -> list[Order]:
    """The orders a table can be shown in: its key and each indexed column, each both ways."""
    return [Order(column, descending) for column in (None, *spec.indexes) for descending in (False, True)]


class OrderScreen(ModalScreen[Order | None]):
    """Pick the order: the key or an index, ascending or descending."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, spec: spi.TableSpec, current: Order) -> None:
        super().__init__()
        self._orders = orders(spec)
        self._current = current
        self._spec = spec

    def compose(self) -> ComposeResult:
        with Dialog():
            yield Label("Order by", classes="title")
            options = []
            for order in self._orders:
                what = f"key ({', '.join(self._spec.primary_key)})" if order.column is None else f"index {order.column}"
                mark = "  ← now" if order == self._current else ""
                options.append(Option(f"{what} {'descending' if order.descending else 'ascending'}{mark}"))
            yield OptionList(*options, id="orders")
            if not self._spec.indexes:
                yield Static(f"no indexes: kvctl table alter {self._spec.name} --add-index COLUMN", classes="hint")

    def on_mount(self) -> None:
        """Highlight the current order."""
        self.query_one("#orders", OptionList).highlighted = self._orders.index(self._current)

    @on(OptionList.OptionSelected, "#orders")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        """Dismiss with the chosen order."""
        self.dismiss(self._orders[event.option_index])

    def action_cancel(self) -> None:
        """Keep the order."""
        self.dismiss(None)


class ExportScreen(ModalScreen[tuple[str, str] | None]):
    """Where and how to export the current view: a path and a format (the suffix picks
    the format and the format the suffix)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, path: str, what: str) -> None:
        super().__init__()
        self._path = path
        self._what = what

    def compose(self) -> ComposeResult:
        fmt = format_for(self._path) or "csv"
        with Dialog():
            yield Label(f"Export {self._what}", classes="title")
            yield Input(value=self._path, placeholder="file to write", id="export-path")
            with RadioSet(id="export-format"):
                for name in FORMATS:
                    yield RadioButton(name, value=name == fmt, id=f"format-{name}")
            yield ErrorLine(id="export-error")
            with Horizontal(classes="buttons"):
                yield Button("Export", variant="primary", id="export")
                yield Button("Cancel", id="cancel")

    @property
    def chosen_format(self) -> str:
        """The format picked in the radio set."""
        pressed = self.query_one("#export-format", RadioSet).pressed_button
        return FORMATS[0] if pressed is None else str(pressed.label)

    @on(Input.Changed, "#export-path")
    def path_changed(self, event: Input.Changed) -> None:
        """A suffix naming a format picks it."""
        fmt = format_for(event.value)
        if fmt is not None and fmt != self.chosen_format:
            self.query_one(f"#format-{fmt}", RadioButton).value = True

    @on(RadioSet.Changed, "#export-format")
    def format_changed(self, event: RadioSet.Changed) -> None:
        """Picking a format changes a known suffix to match."""
        path_input = self.query_one("#export-path", Input)
        current = format_for(path_input.value)
        fmt = self.chosen_format
        if current is not None and current != fmt:
            stem, _, _ = path_input.value.rpartition(".")
            path_input.value = f"{stem}.{fmt}"

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export")
    def submit(self, event: Any) -> None:
        """Dismiss with (path, format), unless the path is empty."""
        path = self.query_one("#export-path", Input).value.strip()
        if not path:
            self.query_one("#export-error", ErrorLine).show("give a file name")
            return
        self.dismiss((path, self.chosen_format))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Close without exporting."""
        self.dismiss(None)
