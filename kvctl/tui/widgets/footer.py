"""The footer of every screen: Textual's, in its compact style (no padding inside a
key) with two spaces between keys (``dashboard.tcss``), so it reads ``? Help  q Quit
/ Filter ...`` at any width.

The keys every screen shares that a user must always find (:data:`FIRST`: ``? Help``,
``q Quit`` and ``^p Palette``, the way to every action) come first, so a narrow
terminal cuts the screen's own keys at the right end, never these (the help screen
lists every key)."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer

FIRST = ("help", "quit", "command_palette")
"""The actions whose keys lead the footer, in this order."""


def first_keys_first(widgets: Iterable[Widget]) -> list[Widget]:
    """The footer's widgets with the keys of :data:`FIRST` moved to the front."""
    items = list(widgets)

    def rank(item: Widget) -> int:
        action = getattr(item, "action", "")  # a key's widget names its action (Textual's FooterKey is private)
        return FIRST.index(action) if action in FIRST else len(FIRST)

    return sorted(items, key=rank)  # stable: the other keys keep their order


class KeysFooter(Footer):
    """The key bindings of the screen, compact and spaced, help and quit first."""

    def __init__(self) -> None:
        super().__init__(show_command_palette=False, compact=True)  # the app binds ctrl+p with the other keys

    def compose(self) -> ComposeResult:
        """Textual's keys, :data:`FIRST` first."""
        yield from first_keys_first(super().compose())
