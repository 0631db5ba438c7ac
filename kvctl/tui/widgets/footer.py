"""The footer of every screen: Textual's, in its compact style when the terminal is
narrower than :data:`ROOMY` columns and without the space between keys under
:data:`TIGHT` columns, so every key still fits on one line of 120 columns."""

from __future__ import annotations

from textual import events
from textual.widgets import Footer

ROOMY = 150
"""Columns from which the footer has room for its spacious style."""
TIGHT = 130
"""Columns under which the keys go without a space between them (their colours set
them apart)."""


class KeysFooter(Footer):
    """The key bindings of the screen, compact on narrow terminals."""

    def __init__(self) -> None:
        super().__init__(show_command_palette=False)  # the app binds ctrl+p with the other keys

    def on_resize(self, event: events.Resize) -> None:
        """Pick the style for the new width (only on a change: restyling the keys is slow)."""
        compact = event.size.width < ROOMY
        if compact != self.compact:
            self.compact = compact
        self.set_class(event.size.width < TIGHT, "-tight")
