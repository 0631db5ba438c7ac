"""The footer of every screen: Textual's, in its compact style (no padding inside a
key) with two spaces between keys (``dashboard.tcss``), so it reads ``? Help  q Quit
/ Filter ...`` at any width.

The keys every screen shares that a user must always find (:data:`FIRST`: ``? Help``,
``q Quit`` and ``^p Palette``, the way to every action) come first, so a narrow
terminal cuts the screen's own keys at the right end, never these (the help screen
lists every key).

Textual builds the footer's keys again on every change of the screen's bindings (a
focus, a loading grid), several times as a screen opens; here a burst of changes
builds them once, and not at all when the keys shown are the same (a screen opened
sooner)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
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


def shown_keys(screen: Screen[Any]) -> tuple[tuple[Any, ...], ...]:
    """What the footer shows of ``screen``'s bindings: each shown key, its action,
    description and tooltip, and whether it is enabled."""
    return tuple(
        (binding.key, binding.key_display, binding.action, binding.description, enabled, tooltip)
        for _, binding, enabled, tooltip in screen.active_bindings.values()
        if binding.show
    )


class KeysFooter(Footer):
    """The key bindings of the screen, compact and spaced, help and quit first."""

    def __init__(self) -> None:
        super().__init__(show_command_palette=False, compact=True)  # the app binds ctrl+p with the other keys
        self._settling = False
        self._shown: tuple[tuple[Any, ...], ...] | None = None

    def compose(self) -> ComposeResult:
        """Textual's keys, :data:`FIRST` first."""
        yield from first_keys_first(super().compose())

    def bindings_changed(self, screen: Screen[Any]) -> None:
        """Build the keys again once the changes of this refresh are in, if the keys
        shown changed."""
        if not self._settling:
            self._settling = True
            self.call_after_refresh(self._bindings_settled, screen)

    def _bindings_settled(self, screen: Screen[Any]) -> None:
        self._settling = False
        keys = shown_keys(screen)
        if keys == self._shown:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:  # Textual builds them then
            self._shown = keys
        super().bindings_changed(screen)
