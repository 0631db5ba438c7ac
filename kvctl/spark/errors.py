"""Getting kvctl's own error out of a failed Spark job.

Spark wraps an exception raised in a Python worker into a Java exception whose
message holds the whole Python traceback. Workers therefore raise
:class:`TaskError`, whose text carries a marker with the spi error class and
message; :func:`unwrap` finds it again on the driver and rebuilds the spi error,
so the CLI prints one ``error:`` line with the right exit code.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from spi import errors as spi_errors

_MARKER = re.compile(r"KVCTL\[(\w+)\] ([^\n]*)")
_MISSING_MODULE = re.compile(r"^(ModuleNotFoundError|ImportError): ")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class TaskError(Exception):
    """Raised in a Spark worker for an spi error (see :func:`unwrap`)."""

    def __init__(self, error: spi_errors.KvError, context: str = "") -> None:
        message = " ".join(f"{context}{error}".split())
        super().__init__(f"KVCTL[{type(error).__name__}] {message}")


class SparkJobError(Exception):
    """A Spark job failed for a reason that is not an spi error; ``exit_code`` per CLI.md."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def guard(items: Iterator[T], context: Callable[[], str] = lambda: "") -> Iterator[T]:
    """Re-raise spi errors from ``items`` as :class:`TaskError` (``context()`` prefixes the message)."""
    try:
        yield from items
    except spi_errors.KvError as exc:
        raise TaskError(exc, context()) from None


def reports_errors(fn: F) -> F:
    """Decorator for data source methods Spark runs in its own Python processes:
    spi errors leave as :class:`TaskError`, so :func:`unwrap` finds them."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except spi_errors.KvError as exc:
            raise TaskError(exc) from None

    return wrapper  # type: ignore[return-value]


def rebuild(name: str, message: str) -> spi_errors.KvError:
    """An spi error of class ``name`` with ``message`` (KvError if the class is unknown)."""
    cls = getattr(spi_errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, spi_errors.KvError)):
        cls = spi_errors.KvError
    error = cls.__new__(cls)
    spi_errors.KvError.__init__(error, message)
    return error


def unwrap(exc: BaseException) -> BaseException:
    """The spi error behind a failed Spark job, a short :class:`SparkJobError`, or ``exc`` itself.

    Only Spark's own exceptions are translated; anything else is returned unchanged.
    """
    text = str(exc)
    found = _MARKER.search(text)
    if found:
        return rebuild(found.group(1), found.group(2).strip())
    if not _is_spark_error(exc):
        return exc
    summary = _summary(text)
    if _MISSING_MODULE.match(summary):
        return SparkJobError(
            f"Spark's Python workers cannot load kvctl ({summary}); install kvctl for the interpreter "
            "PYSPARK_PYTHON names on every executor, or set PYSPARK_PYTHON to one that has it",
            3,
        )
    return SparkJobError(f"the Spark job failed: {summary}")


def _is_spark_error(exc: BaseException) -> bool:
    module = type(exc).__module__
    return module.startswith(("pyspark", "py4j"))


def _summary(text: str) -> str:
    """The most telling line of a Spark error: the last Python exception line, else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    python_errors = [line for line in lines if re.match(r"^[\w.]+(Error|Exception): ", line)]
    chosen = python_errors[-1] if python_errors else (lines[0] if lines else type(text).__name__)
    return chosen if len(chosen) <= 300 else chosen[:297] + "..."
