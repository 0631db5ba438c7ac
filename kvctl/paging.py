"""Paging through a scan for the CLI: ``--limit N | --all``, ``--after TOKEN`` and the hint to continue.

A command states how to read one page (``read(limit, after)``, e.g. a table's
``scan_page``); :class:`Pages` streams rows page by page up to the wanted count,
in bounded memory, and :func:`continue_hint` tells the user (on stderr) how to go on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

from kvctl.errors import CliError

DEFAULT_LIMIT = 1000
"""Rows printed when neither ``--limit`` nor ``--all`` is given."""
PAGE = 1000
"""Rows fetched per request: output streams whatever ``--limit`` says."""

ReadPage = Callable[[int, str | None], Any]
"""``read(limit, after)`` → a page with ``rows`` and ``next_token`` (None: the scan is done)."""


def wanted_rows(limit: int | None, all_rows: bool) -> int | None:
    """The rows to print for ``--limit``/``--all`` (None: every row); a bad combination is a usage error."""
    if limit is not None and all_rows:
        raise CliError("--limit and --all cannot be used together")
    if limit is not None and limit < 0:
        raise CliError(f"--limit must be zero or more, got {limit}")
    return None if all_rows else (limit if limit is not None else DEFAULT_LIMIT)


def _chunk(wanted: int | None) -> int:
    return PAGE if wanted is None else min(wanted, PAGE)


class Pages:
    """The rows of a paged scan, up to ``wanted`` of them (None: all), starting after ``after``.

    The first page is read on construction, before anything is printed, so a bad
    token or column fails cleanly. After :meth:`rows` is exhausted, :attr:`token`
    resumes after the last row given, or is None when the scan is done.
    """

    def __init__(self, read: ReadPage, wanted: int | None, after: str | None = None) -> None:
        self._read = read
        self._wanted = wanted
        self._first = read(_chunk(wanted), after)
        self.token: str | None = None

    def rows(self) -> Iterator[Any]:
        """Every row, fetching the following pages as needed."""
        page, left = self._first, self._wanted
        while True:
            yield from page.rows
            if left is not None:
                left -= len(page.rows)
            if page.next_token is None or left == 0:
                self.token = page.next_token
                return
            page = self._read(_chunk(left), page.next_token)


def continue_hint(shown: int, token: str | None, *, default_limit: bool = False) -> None:
    """When more rows may remain, say on stderr how many were shown and how to get the
    rest: ``--all`` for every row, ``--after TOKEN`` for the next page. ``default_limit``:
    no ``--limit`` was given, so the cut was not asked for (a script writing a file
    would miss rows): the line says so first."""
    if token is None:
        return
    rows = f"{shown} row{'s' if shown != 1 else ''}"
    if default_limit:
        print(
            f"{rows} shown; more remain: output stopped at the default limit of {DEFAULT_LIMIT} rows; "
            f"add --all to print every row (or continue with --after {token})",
            file=sys.stderr,
        )
    else:
        print(f"{rows} shown; more may remain: continue with --after {token} (--all prints every row)", file=sys.stderr)
