"""The filter bar: a ``--where`` input with history (up/down) and the parse error shown
under the input, a caret at the position it names. Escape leaves the input; with an
error shown it also puts back the filter in force (the rows never changed), so a bad
filter and its error go with one key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from kvctl.tui.history import HistoryCursor


def placeholder(example: str) -> str:
    """The filter's placeholder: an example clause (``example``) and the keys."""
    return f"filter: {example or '--where syntax'}   (Enter applies, ↑↓ history, empty clears)"


class WhereInput(Input):
    """The where-clause input: up/down walk the history, escape leaves it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "older", "Older filter", show=False),
        Binding("down", "newer", "Newer filter", show=False),
        Binding("escape", "leave", "Back to rows", show=False),
    ]

    def __init__(self, history: Callable[[], list[str]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._history = history
        self._cursor: HistoryCursor | None = None

    def on_focus(self, event: events.Focus) -> None:
        """Start a new walk through the history."""
        self._cursor = None

    def action_older(self) -> None:
        """Show the previous where-clause of the history."""
        if self._cursor is None:
            self._cursor = HistoryCursor(self._history(), self.value)
        self._show(self._cursor.older())

    def action_newer(self) -> None:
        """Show the next where-clause (back to what was typed)."""
        if self._cursor is not None:
            self._show(self._cursor.newer())

    def _show(self, text: str | None) -> None:
        if text is not None:
            self.value = text
            self.cursor_position = len(text)

    def action_leave(self) -> None:
        """Give the focus back to the rows (a bad filter and its error go)."""
        self.post_message(FilterBar.Left())


class FilterBar(Vertical):
    """The where input and the line under it for its error."""

    class Left(Message):
        """The user left the filter with escape."""

    def __init__(self, history: Callable[[], list[str]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._history = history
        self._applied = ""

    def compose(self) -> ComposeResult:
        yield WhereInput(self._history, placeholder=placeholder(""), id="where")
        yield Static("", id="where-error")

    def show_example(self, example: str) -> None:
        """Show ``example`` (a where-clause of this table) in the empty input."""
        self.input.placeholder = placeholder(example)

    @property
    def input(self) -> WhereInput:
        """The where-clause input."""
        return self.query_one(WhereInput)

    def show_error(self, message: str, position: int | None) -> None:
        """Show ``message`` under the input, a caret under character ``position`` (1-based).
        The input's cursor stays where the user typed (``ctrl+u`` clears the whole line)."""
        error = self.query_one("#where-error", Static)
        text = Text()
        if position is not None:
            start = self.input.content_region.x - error.region.x  # the input's border and padding
            column = start + position - 1 - self.input.scroll_offset.x
            if 0 <= column < self.size.width - 2:
                text.append(" " * column + "^ ", style="bold red")
        text.append(message, style="red")
        error.update(text)
        self.add_class("-error")

    def applied(self, text: str) -> None:
        """``text`` is the filter in force now: remove the error line."""
        self._applied = text
        self.query_one("#where-error", Static).update("")
        self.remove_class("-error")

    def on_filter_bar_left(self, message: Left) -> None:
        """Leaving with an error shown: the filter in force goes back in the input, the
        error goes (the message goes on to the screen, which focuses the rows)."""
        if self.has_class("-error"):
            self.input.value = self._applied
            self.applied(self._applied)
