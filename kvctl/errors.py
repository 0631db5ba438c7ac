"""How kvctl reports failures: one ``error:`` line on stderr and an exit code.

Exit codes (CLI.md): 0 ok, 1 the operation did not happen, 2 bad usage / input /
config / incompatible schema change, 3 provider unavailable, 4 an internal error (a
bug), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM, handled as Ctrl-C is).
"""

from __future__ import annotations

import errno
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from types import FrameType

from spi import errors as spi_errors
from spi.suggest import did_you_mean
from spi.textvalues import visible

NOT_DONE = 1
USAGE = 2
UNAVAILABLE = 3
INTERNAL = 4
INTERRUPTED = 130
TERMINATED = 143

_terminated = threading.Event()  # set by the SIGTERM handler

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
_MISSING_TABLE = re.compile(r"table '(\w+)' does not exist")
"""How a provider says a table is missing (the name: a table name is a word)."""


class CliError(Exception):
    """A failure kvctl reports itself (bad usage or input by default: exit 2)."""

    def __init__(self, message: str, exit_code: int = USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class NotDone(CliError):
    """The operation did not happen (exit 1)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, NOT_DONE)


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM handler: whatever handles Ctrl-C now does (Python's, Spark's that
    cancels its jobs first, asyncio's that cancels the dashboard's loop), and the
    interrupt then exits 143 saying ``terminated``."""
    _terminated.set()
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):  # SIGINT ignored or left to the system
        raise KeyboardInterrupt
    handler(signal.SIGINT, frame)


def terminated() -> bool:
    """Whether SIGTERM arrived (a command that then ends on its own still exits 143)."""
    return _terminated.is_set()


NO_ROOM = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
"""Why a file cannot grow: no space left, the file-size limit, the disk quota."""


def no_room(exc: BaseException) -> bool:
    """Whether ``exc`` is a file that could not grow (:data:`NO_ROOM`): the machine is
    short, not the command wrong (exit 3; temp files of sorts and spills included)."""
    return isinstance(exc, OSError) and exc.errno in NO_ROOM


def exit_code_for(exc: BaseException) -> int:
    """The exit code of an exception: 1 (not done) for the SPI's not-found, exists, version,
    conflict and frozen-table errors and the system's (a file, the disk), 4 for a bug."""
    if isinstance(exc, CliError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return TERMINATED if _terminated.is_set() else INTERRUPTED
    if isinstance(exc, spi_errors.ProviderUnavailableError) or no_room(exc):
        return UNAVAILABLE
    if isinstance(exc, _USAGE_ERRORS):
        return USAGE
    if isinstance(exc, (spi_errors.KvError, OSError)):
        return NOT_DONE
    return INTERNAL  # not kvctl's, the SPI's or the system's: a bug


def message_for(exc: BaseException, tables: Callable[[], Iterable[str]] | None = None) -> str:
    """The one-line message of an exception (an internal error names its type and says
    how to report it); a missing table's ends with the command that lists the tables
    and, when ``tables`` (the store's table names) holds a name two edits away,
    ``(did you mean 'orders'?)``."""
    if isinstance(exc, (CliError, spi_errors.KvError)):
        text = str(exc)
        if isinstance(exc, spi_errors.TableNotFoundError) and "kvctl " not in text and "; " not in text:
            text = f"{text} {TABLE_LIST_HINT}"
            missing = _MISSING_TABLE.match(text)
            if missing and tables is not None:
                text += did_you_mean(missing.group(1), tables())
    elif isinstance(exc, KeyboardInterrupt):
        text = "terminated" if _terminated.is_set() else "interrupted"
    elif no_room(exc):
        assert isinstance(exc, OSError)
        import tempfile

        where = exc.filename or f"a temp file in {tempfile.gettempdir()}"
        text = f"cannot write {where}: {exc.strerror} (free space, or set TMPDIR to a folder on a disk with room)"
    elif isinstance(exc, OSError):
        text = str(exc)
    else:
        text = (
            f"internal error (a bug in kvctl): {type(exc).__name__}: {exc}; please report it to the kvctl "
            "maintainers with what this command, rerun with --debug, prints (the traceback)"
        )
    return visible(" ".join(text.split())) or type(exc).__name__  # no control character reaches a terminal


def report(exc: BaseException, tables: Callable[[], Iterable[str]] | None = None) -> int:
    """Print ``error: ...`` for ``exc`` on stderr (``tables``: see :func:`message_for`)
    and return its exit code."""
    print(f"error: {message_for(exc, tables)}", file=sys.stderr)
    return exit_code_for(exc)
