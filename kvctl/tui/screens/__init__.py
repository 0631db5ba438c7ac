"""The dashboard's screens: the table list, a table's rows, and the screens and dialogs
opened from them."""

from typing import Any

from textual.screen import Screen


def gone(screen: Screen[Any], part: str) -> bool:
    """True once ``screen`` is gone or going: a worker's result that arrives then is
    dropped (quitting removes a screen's widgets before the screen: ``part``, the
    selector of one of them, then matches nothing)."""
    return not screen.is_attached or not screen.query(part)


__all__ = ["gone"]
