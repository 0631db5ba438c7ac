"""The parts every dialog shares, so each fits an 80x24 terminal: the dialog's box
(scrolling when its content is taller than the screen), a form field on one line
(its label beside its controls) and an error line that scrolls itself into view.
Their one-line look is in ``dashboard.tcss`` (``.dialog``)."""

from __future__ import annotations

from typing import Any

from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Label, Static


class Dialog(VerticalScroll, can_focus=False):
    """A dialog's box: as tall as its content up to 90% of the screen, scrolling past
    that (the focused control scrolls into view; the box itself takes no focus)."""

    def __init__(self, *children: Widget, classes: str = "", **kwargs: Any) -> None:
        super().__init__(*children, classes=f"dialog {classes}", **kwargs)


class ErrorLine(Static):
    """A line for an error: hidden while empty, scrolled into view when it shows."""

    DEFAULT_CLASSES = "error -hidden"

    def show(self, text: str, *, scroll: bool = True) -> None:
        """Show ``text`` (empty: hide the line) and, with ``scroll``, scroll it into view."""
        self.update(text)
        self.set_class(not text, "-hidden")
        if text and scroll:
            self.reveal()

    def reveal(self) -> None:
        """Scroll the line into view (once it is laid out)."""
        self.call_after_refresh(self.scroll_visible, animate=False)


def field_row(label: str, *controls: Widget, width: int) -> Horizontal:
    """One field of a form on one line: ``label`` in ``width`` columns, then ``controls``."""
    caption = Label(label, classes="field-label")
    caption.styles.width = width
    return Horizontal(caption, *controls, classes="field")
