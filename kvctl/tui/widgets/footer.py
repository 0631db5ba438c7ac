"""The footer of every screen: Textual's, in its compact style when the terminal is
narrower than :data:`ROOMY` columns and without the space between keys under
:data:`TIGHT` columns, so every key still fits on one line of 120 columns.

The keys every screen shares that a user must always find (:data:`FIRST`: ``? Help``
and ``q Quit``) come first, so a narrow terminal (80 columns) cuts the screen's own
keys at the right end, never these (the help screen lists every key)."""

from __future__ import annotations

from collections.abc import Iterable

from textual import events
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer

ROOMY = 150
"""Columns from which the footer has room for its spacious style."""
TIGHT = 130
"""Columns under which the keys go without a space between them (their colours set
them apart)."""
FIRST = ("help", "quit")
"""The actions whose keys lead the footer, in this order."""


def first_keys_first(widgets: Iterable[Widget]) -> list[Widget]:
    """The footer's widgets with the keys of :data:`FIRST` moved to the front."""
    items = list(widgets)

    def rank(item: Widget) -> int:
        action = getattr(item, "action", "")  # a key's widget names its action (Textual's FooterKey is private)
        return FIRST.index(action) if action in FIRST else len(FIRST)

    return sorted(items, key=rank)  # stable: the other keys keep their order


class KeysFooter(Footer):
    """The key bindings of the screen, compact on narrow terminals, help and quit first."""

    def __init__(self) -> None:
        super().__init__(show_command_palette=False)  # the app binds ctrl+p with the other keys

    def compose(self) -> ComposeResult:
        """Textual's keys, :data:`FIRST` first."""
        yield from first_keys_first(super().compose())

    def on_resize(self, event: events.Resize) -> None:
        """Pick the style for the new width (only on a change: restyling the keys is slow)."""
        compact = event.size.width < ROOMY
        if compact != self.compact:
            self.compact = compact
        self.set_class(event.size.width < TIGHT, "-tight")
