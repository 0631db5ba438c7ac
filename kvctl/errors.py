"""How kvctl reports failures: one ``error:`` line on stderr and an exit code.

Exit codes (CLI.md): 0 ok, 1 the operation did not happen, 2 bad usage / input /
config / incompatible schema change, 3 provider unavailable, 130 interrupted.
"""

from __future__ import annotations

import sys

from spi import errors as spi_errors

NOT_DONE = 1
USAGE = 2
UNAVAILABLE = 3
INTERRUPTED = 130

_USAGE_ERRORS = (
    spi_errors.SchemaError,
    spi_errors.IncompatibleSchemaError,
    spi_errors.InvalidFieldError,
    spi_errors.LimitExceededError,
    spi_errors.WhereSyntaxError,
    spi_errors.UrlError,
)
TABLE_LIST_HINT = "(kvctl table list shows the tables)"
"""What a missing table's error ends with (CLI.md), unless it already shows a command."""


class CliError(Exception):
    """A failure kvctl reports itself (bad usage or input by default: exit 2)."""

    def __init__(self, message: str, exit_code: int = USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class NotDone(CliError):
    """The operation did not happen (exit 1)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, NOT_DONE)


def exit_code_for(exc: BaseException) -> int:
    """The exit code of an exception: 1 (not done) for the SPI's not-found, exists, version,
    conflict and frozen-table errors, and for anything unexpected."""
    if isinstance(exc, CliError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, spi_errors.ProviderUnavailableError):
        return UNAVAILABLE
    if isinstance(exc, _USAGE_ERRORS):
        return USAGE
    return NOT_DONE


def message_for(exc: BaseException) -> str:
    """The one-line message of an exception (unexpected ones name their type); a
    missing table's ends with the command that lists the tables."""
    if isinstance(exc, (CliError, spi_errors.KvError)):
        text = str(exc)
        if isinstance(exc, spi_errors.TableNotFoundError) and "kvctl " not in text and "; " not in text:
            text = f"{text} {TABLE_LIST_HINT}"
    elif isinstance(exc, KeyboardInterrupt):
        text = "interrupted"
    else:
        text = f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback)"
    return " ".join(text.split()) or type(exc).__name__


def report(exc: BaseException) -> int:
    """Print ``error: ...`` for ``exc`` on stderr and return its exit code."""
    print(f"error: {message_for(exc)}", file=sys.stderr)
    return exit_code_for(exc)
