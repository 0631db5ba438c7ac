"""Where kvctl's, the SPI's and the providers' log records go: nowhere by default
(each package has a ``NullHandler``; kvctl's in :mod:`kvctl.app`), to stderr with ``--debug`` or ``KVCTL_LOG``."""

from __future__ import annotations

import logging
import sys

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
