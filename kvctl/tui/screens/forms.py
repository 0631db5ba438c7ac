"""What every form of the dashboard shares (the row form; create, alter and drop a
table): the first editable field focused when it opens, ``ctrl+s`` save and ``esc``
cancel in its own footer, and Enter moving to the next field (saving on the last
one), so typing straight away and Enter, Enter, ... Enter fill and save a form.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Input, Static

from kvctl.tui.widgets.footer import KeysFooter

T = TypeVar("T")

FORM_KEYS = "ctrl+s save · enter next field (on the last: save) · esc cancel"
"""The form's keys, under its fields (and in the footer)."""


class FormScreen(ModalScreen[T]):
    """A modal form: subclasses compose their fields in :meth:`compose_form`, say which
    widgets are its fields (:meth:`fields`, in order) and implement save and cancel."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", key_display="^s", tooltip="Save the form"),
        Binding("escape", "cancel", "Cancel", key_display="esc", tooltip="Close the form without saving"),
        # a priority binding runs as the key is read, so the keys typed right after
        # Enter go to the next field (an Input.Submitted message would come too late)
        Binding("enter", "next_field", "Next field", show=False, priority=True),
    ]

    @abstractmethod
    def compose_form(self) -> ComposeResult:
        """The form's widgets (the dialog)."""

    @abstractmethod
    def fields(self) -> list[Widget]:
        """The form's fields (inputs, choices), in the order Enter walks them."""

    @abstractmethod
    def action_save(self) -> None:
        """Check the fields and save."""

    @abstractmethod
    def action_cancel(self) -> None:
        """Close without saving."""

    def compose(self) -> ComposeResult:
        """The form, then the footer with its keys."""
        yield from self.compose_form()
        yield KeysFooter()

    def keys_hint(self) -> Static:
        """A line telling the form's keys (for subclasses to place under the fields)."""
        return Static(FORM_KEYS, classes="hint form-keys")

    def editable(self) -> list[Widget]:
        """The fields that take input now (not disabled)."""
        return [w for w in self.fields() if not w.disabled]

    def on_mount(self) -> None:
        """Focus the first editable field: what is typed first goes into the form."""
        editable = self.editable()
        if editable:
            editable[0].focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter walks the fields only from a field's input (on a button, a choice or a
        box it does what it does there)."""
        if action == "next_field":
            return isinstance(self.focused, Input) and self.focused in self.editable()
        return True

    def action_next_field(self) -> None:
        """Enter: on to the next field; on the last one, save."""
        editable = self.editable()
        if self.focused not in editable or self.focused is editable[-1]:
            self.action_save()
            return
        following = editable[editable.index(self.focused) + 1]
        self.set_focus(following)
        if isinstance(following, Input):
            following.cursor_position = len(following.value)
