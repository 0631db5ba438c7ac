"""Bulk ``put --file``: check the whole input first (spooled to a temp file), then load.

Pass 1 reads, types and validates every record and pickles the typed rows into an
anonymous temp file (bounded memory, stdin included); any bad value stops here with
exit 2 and nothing written. Pass 2 streams the spool through the table's ``load``
in batches, each atomic, with a progress bar on stderr when it is a terminal.
"""

from __future__ import annotations

import pickle
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any

import spi
from kvctl.errors import CliError, NotDone
from kvctl.inputs import InputError, choose_format, coerce, open_input, read_records


class Spool:
    """Typed rows (and their input lines) pickled one by one into a temp file."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="kvctl-put-")  # noqa: SIM115 - closed by close()
        self.count = 0

    def add(self, line: int, row: dict[str, Any]) -> None:
        """Append one row."""
        self._file.write(pickle.dumps((line, row), protocol=pickle.HIGHEST_PROTOCOL))
        self.count += 1

    def entries(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every ``(line, row)`` from the start."""
        self._file.seek(0)
        for _ in range(self.count):
            yield pickle.load(self._file)  # our own temp file, written above

    def line_of(self, index: int) -> int | None:
        """The input line of the ``index``-th row (0-based)."""
        for i, (line, _) in enumerate(self.entries()):
            if i == index:
                return line
        return None

    def close(self) -> None:
        """Delete the temp file."""
        self._file.close()


def check(spec: spi.TableSpec, path: str, fmt: str | None) -> Spool:
    """Pass 1: read, type and validate the whole input into a :class:`Spool`."""
    source = "stdin" if path == "-" else path
    stream = open_input(path)
    spool = Spool()
    try:
        kind = choose_format(path, fmt, stream)
        for line, record in read_records(stream, kind, source):
            if spool.count == 0 and kind in ("csv", "tsv"):
                _check_header(spec, list(record), source)
            spool.add(line, coerce(spec, record, kind, source, line))
    except BaseException:
        spool.close()
        raise
    finally:
        if path != "-":
            stream.close()
    return spool


def _check_header(spec: spi.TableSpec, header: list[str], source: str) -> None:
    for column in header:
        if not spec.has_column(column):
            raise InputError(source, 1, f"unknown column (columns of {spec.name!r}: {', '.join(spec.columns)})", column)
    missing = [c for c in spec.primary_key if c not in header]
    if missing:
        raise InputError(source, 1, f"the header lacks key column(s) {', '.join(missing)}")


def load(
    table: Any,
    spool: Spool,
    *,
    mode: str,
    batch_size: int,
    source: str,
    progress: Callable[[int], None] | None = None,
    ttl: int | float | None = None,
) -> int:
    """Pass 2: load the spooled rows in batches (expiring after ``ttl`` seconds, None:
    the table's ttl); errors say how many rows were written."""
    rows = (row for _, row in spool.entries())
    try:
        return int(table.load(rows, mode=mode, batch_size=batch_size, progress=progress, ttl=ttl))
    except spi.KvError as exc:
        written = exc.rows_written or 0
        line = None if exc.row_index is None else spool.line_of(exc.row_index)
        where = f"{source} line {line}: " if line is not None else ""
        message = str(exc).removeprefix(f"row {exc.row_index}: ")
        detail = f"{where}{message} ({written} row{'s' if written != 1 else ''} written before the failure)"
        if isinstance(exc, spi.RowExistsError):
            raise NotDone(detail) from None
        exc.args = (detail,)
        raise


def progress_bar(total: int, label: str = "loading") -> tuple[Callable[[int], None] | None, Callable[[], None]]:
    """A progress callback and its finisher: a rich bar on stderr when it is a terminal."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=False,
    )
    task = bar.add_task("load", total=total)
    bar.start()
    return (lambda written: bar.update(task, completed=written)), bar.stop


def check_batch_size(batch_size: int) -> None:
    """``--batch-size`` must be positive."""
    if batch_size < 1:
        raise CliError(f"--batch-size must be a positive integer, got {batch_size}")
