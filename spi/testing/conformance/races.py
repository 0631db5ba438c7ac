"""Conditional writes racing on one row, shared by the thread and the process groups.

Every racer runs the same conditional write on the row ``("lock",)`` of COUNTERS, each
with its own value: exactly one may win, every other must lose the way the contract
says (``compare_and_swap`` returns False; ``replace(version=)`` raises
:class:`VersionMismatchError`; ``insert`` raises :class:`RowExistsError`), and the row
must hold the winner's value.
"""

from __future__ import annotations

from typing import Any

from spi.errors import RowExistsError, VersionMismatchError

RACES = ("compare_and_swap", "replace", "insert")
"""The conditional writes raced."""
KEY = ("lock",)
START = "free"
"""The owner every racer of ``compare_and_swap`` expects, and ``replace`` replaces."""


def prepare_race(table: Any, race: str) -> None:
    """The row before the race: absent for ``insert``, else owned by START at version 1."""
    if race != "insert":
        assert table.upsert({"name": KEY[0], "owner": START}) == 1


def attempt_race(table: Any, race: str, owner: str) -> bool:
    """Run ``race`` writing ``owner``; whether it won. Losing any other way raises."""
    try:
        if race == "compare_and_swap":
            return bool(table.compare_and_swap(KEY, "owner", START, owner))
        if race == "replace":
            table.replace({"name": KEY[0], "owner": owner}, version=1)
        else:
            table.insert({"name": KEY[0], "owner": owner})
    except (RowExistsError, VersionMismatchError) as exc:
        expected = RowExistsError if race == "insert" else VersionMismatchError
        if not isinstance(exc, expected):
            raise
        return False
    return True


def check_race(table: Any, race: str, outcomes: dict[str, bool]) -> None:
    """Exactly one racer won and the row holds its value, at the version its write made."""
    winners = [owner for owner, won in outcomes.items() if won]
    assert len(winners) == 1, f"{race}: winners {winners} of {sorted(outcomes)}"
    row = table.read(KEY)
    assert row is not None and row["owner"] == winners[0]
    assert row.version == (1 if race == "insert" else 2)
