"""The help screen (``?``): every key of the screen it was opened from, taken from
that screen's live bindings (so it cannot drift from the footer), and notes on the
filter, key syntax and the live view."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Label, Static

from kvctl.tui.live import MARK_SECONDS

NOTES = f"""\
Filter (/): the --where syntax of kvctl scan, e.g.  status = 'open' and total > 10,
  region in ('eu', 'us'),  note is null,  name like 'A%',  id between 1 and 9.
  Enter applies, an empty filter shows every row, up/down walk the history.
Go to (g): the key as col=value words, as on the command line:  region=eu id=42
  (quote values with spaces: name='New York'), or its first columns (region=eu: the
  first row at or after them). Jumping shows the rows in key order; under a filter,
  a key the filter hides is said to be hidden, and the matching rows after it show.
Forms (a, e, create, alter): typing goes into the first field, Enter moves to the
  next field and saves on the last, ctrl+s saves from anywhere, esc cancels.
Info (i): row count, size, change events per minute, every column's nulls, min and
  max, and a histogram of a numeric column.
Values read as typed on the command line: null, b64:... bytes, ISO 8601 timestamps.
Live (w): on a table with a change feed, rows change as writes commit (in any
  process): ● changed, + new, ✗ deleted, marked for {MARK_SECONDS:g} s; the header shows the
  revision seen. w again, or leaving the rows, stops it; kvctl table alter T --changes
  gives a table a feed.
ctrl+p opens the command palette: every action, every table, every profile,
  create, alter and drop a table."""


def described_bindings(screen: Screen[object]) -> list[ActiveBinding]:
    """The keys of ``screen`` worth telling the user about: shown in the footer, or
    described for help (a tooltip)."""
    return [
        active
        for active in screen.active_bindings.values()
        if active.binding.description and (active.binding.show or active.binding.tooltip)
    ]


def key_help(screen: Screen[object]) -> list[tuple[str, str]]:
    """(key, what it does) of :func:`described_bindings`."""
    return [
        (screen.app.get_key_display(active.binding), active.binding.tooltip or active.binding.description)
        for active in described_bindings(screen)
    ]


class HelpScreen(ModalScreen[None]):
    """The keys of one screen and the syntax notes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close", key_display="esc"),
    ]

    def __init__(self, title: str, entries: list[tuple[str, str]]) -> None:
        super().__init__()
        self._title = title
        self._entries = entries

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog -wide", id="help"):
            yield Label(f"Help: {self._title}", classes="title")
            keys = Text()
            for key, description in self._entries:
                keys.append(f"{key:>8}  ", style="bold")
                keys.append(f"{description}\n")
            yield Static(keys, id="help-keys")
            yield Static(NOTES, id="help-notes")

    def action_close(self) -> None:
        """Back to the screen it was opened from."""
        self.dismiss(None)
