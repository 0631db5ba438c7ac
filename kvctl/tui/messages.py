"""Messages the screens send up to the dashboard app."""

from __future__ import annotations

from textual.message import Message


class OpenTable(Message):
    """Show the rows of table ``name`` (``live``: in the live view)."""

    def __init__(self, name: str, *, live: bool = False) -> None:
        super().__init__()
        self.name = name
        self.live = live
