"""Messages the screens send up to the dashboard app."""

from __future__ import annotations

from textual.message import Message


class OpenTable(Message):
    """Show the rows of table ``name``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
