"""Where kvctl's, the SPI's and the providers' log records go: nowhere by default
(each package has a ``NullHandler``; kvctl's in :mod:`kvctl.app`), to stderr with ``--debug`` or ``KVCTL_LOG``."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

from kvctl.errors import CliError

PACKAGES = ("spi", "providers", "kvctl", "migrations")
"""The loggers kvctl configures (every module logs under its package's name)."""
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
"""The values ``KVCTL_LOG`` takes."""


def log_to_stderr(level: str) -> None:
    """Send the packages' records at ``level`` (a :data:`LEVELS` name) and above to
    stderr, one line each; an unknown level is a usage error."""
    number = LEVELS.get(level)
    if number is None:
        raise CliError(f"KVCTL_LOG must be one of {', '.join(LEVELS)}, got {level!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in PACKAGES:
        logger = logging.getLogger(name)
        logger.setLevel(number)
        logger.addHandler(handler)


@contextlib.contextmanager
def away_from_terminal(path: Path) -> Iterator[None]:
    """While a full-screen program runs: the records :func:`log_to_stderr` sends to
    stderr go to the file ``path`` instead (stderr is the screen it draws), and stderr
    says where once it ends. Nothing changes when logging is off."""
    moved = [
        (logger, h)
        for logger in map(logging.getLogger, PACKAGES)
        for h in logger.handlers
        if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stderr
    ]
    if not moved:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    to_file = logging.FileHandler(path, encoding="utf-8")
    to_file.setFormatter(moved[0][1].formatter)
    for logger, handler in moved:
        logger.removeHandler(handler)
        logger.addHandler(to_file)
    try:
        yield
    finally:
        for logger, handler in moved:
            logger.removeHandler(to_file)
            logger.addHandler(handler)
        to_file.close()
        print(f"the dashboard's log is in {path}", file=sys.stderr)
