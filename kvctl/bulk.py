"""Bulk ``put --file``: check the whole input first (spooled to a temp file), then load.

Pass 1 reads, types and validates every record into a spool (bounded memory, stdin
included; input that is not a regular file is first copied to a temp file, so it can
be read again). CSV and TSV are parsed and typed column by column in C
(:mod:`kvctl.columnar`) and spooled as Arrow IPC; JSON and NDJSON records are decoded
by :mod:`kvctl.inputs` (Python's json, in C) and typed column by column too. Input
the columnar readers cannot decide (records that set different columns, a file
pyarrow cannot parse) is read record by record (:mod:`kvctl.inputs`, the reference)
and pickled. Any bad value stops here with exit 2, naming its line and
column, and nothing written. Pass 2 streams the spool through the table's ``load``
in batches, each atomic, with a progress bar on stderr when it is a terminal.

Temp files go where :mod:`tempfile` puts them (``$TMPDIR``, else ``/tmp``); one that
cannot grow there (a full disk, a file-size limit) stops the command with exit 3 and
one line naming it and ``TMPDIR`` (:func:`temp_room`), nothing written.
"""

from __future__ import annotations

import contextlib
import csv
import os
import pickle
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

import spi
from kvctl import headers
from kvctl.errors import UNAVAILABLE, CliError, NotDone, no_room
from kvctl.inputs import InputError, TextOptions, choose_format, coerce, open_input, read_header, read_records
from spi.arrow import arrow_columns
from spi.types import describe
from spi.validated import ValidatedRows


@contextlib.contextmanager
def temp_room(what: str) -> Iterator[None]:
    """Around the writing of ``what`` (temp files, and no other file's writes): a temp
    file that cannot grow becomes one error line naming it, its folder and ``TMPDIR``,
    exit 3 (the environment is short, not the input bad), saying nothing was written."""
    try:
        yield
    except OSError as exc:
        if not no_room(exc):
            raise
        raise CliError(
            f"cannot write {what} in {tempfile.gettempdir()} (temp files about the input's size): "
            f"{exc.strerror or exc}; nothing was written (set TMPDIR to a folder on a disk with room)",
            UNAVAILABLE,
        ) from None


class Input:
    """The input file as UTF-8, readable again and again: the file itself, or a temp
    copy of stdin (``-``), of anything else that is not a regular file (a pipe), or of
    a file in another ``--encoding`` (transcoded to UTF-8)."""

    def __init__(self, path: str, text: TextOptions | None = None) -> None:
        self.source = "stdin" if path == "-" else path
        self.text = text or TextOptions()
        self._copy: IO[bytes] | None = None
        self.path = path
        try:
            regular = path != "-" and stat.S_ISREG(os.stat(path).st_mode)
        except OSError:
            regular = False  # open_input explains
        if self.text.encoding != "utf-8":
            self._transcode()
        elif not regular:
            stream = None if path == "-" else open_input(path)
            self._copy = tempfile.NamedTemporaryFile(prefix="kvctl-input-")  # noqa: SIM115 - closed by close()
            try:
                with temp_room(f"the copy of {self.source}"):
                    shutil.copyfileobj(sys.stdin.buffer if stream is None else stream.buffer, self._copy, 1 << 20)
                    self._copy.flush()
            except BaseException:
                self.close()
                raise
            finally:
                if stream is not None:
                    stream.close()
            self.path = self._copy.name

    def _transcode(self) -> None:
        """Copy the input, decoded from ``--encoding``, to a UTF-8 temp file."""
        import io

        stream = None if self.path == "-" else open_input(self.path)
        raw = sys.stdin.buffer if stream is None else stream.buffer
        self._copy = tempfile.NamedTemporaryFile(prefix="kvctl-input-")  # noqa: SIM115 - closed by close()
        decoded = io.TextIOWrapper(raw, encoding=self.text.encoding, newline="")
        out = io.TextIOWrapper(self._copy, encoding="utf-8", newline="")
        try:
            with temp_room(f"the UTF-8 copy of {self.source}"):
                shutil.copyfileobj(decoded, out, 1 << 20)
                out.flush()
        except UnicodeError:
            self.close()
            raise InputError(self.source, None, f"is not {self.text.encoding} text (see --encoding)") from None
        except BaseException:
            self.close()
            raise
        finally:
            decoded.detach()  # closing is the stream's (never stdin)
            if not self._copy.closed:
                out.detach()
            if stream is not None:
                stream.close()
        self.path = self._copy.name

    def report_renames(self, kind: str) -> None:
        """On stderr, each CSV/TSV header renamed to be a column name
        (:func:`kvctl.headers.report`); an unreadable header is the readers' to report."""
        if kind in ("csv", "tsv"):
            with contextlib.suppress(UnicodeDecodeError, csv.Error):
                headers.report(read_header(self.path, kind, self.text.separator(kind)))

    def records(self, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """The raw records with their lines (:func:`kvctl.inputs.read_records`)."""
        with open_input(self.path) as stream:
            yield from read_records(stream, kind, self.source, self.text.delimiter)

    def close(self) -> None:
        """Delete the temp copy, if any."""
        if self._copy is not None:
            _discard(self._copy)


class Spool:
    """Typed rows (and their input lines) pickled one by one into a temp file."""

    def __init__(self, spec: spi.TableSpec) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="kvctl-put-")  # noqa: SIM115 - closed by close()
        self._key = spec.primary_key
        self._keys: set[tuple[Any, ...]] = set()
        self.count = 0

    def add(self, line: int, row: dict[str, Any]) -> None:
        """Append one row."""
        self._file.write(pickle.dumps((line, row), protocol=pickle.HIGHEST_PROTOCOL))
        self._keys.add(tuple(row[c] for c in self._key))
        self.count += 1

    def distinct_keys(self) -> int:
        """How many distinct keys the rows have."""
        return len(self._keys)

    def entries(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every ``(line, row)`` from the start."""
        self._file.seek(0)
        for _ in range(self.count):
            yield pickle.load(self._file)  # our own temp file, written above

    def rows(self, *, distinct: bool = False) -> Iterable[dict[str, Any]]:
        """Every row from the start (``distinct``, as :meth:`ArrowSpool.rows` takes it,
        changes nothing here)."""
        return (row for _, row in self.entries())

    def line_of(self, index: int) -> int | None:
        """The input line of the ``index``-th row (0-based)."""
        for i, (line, _) in enumerate(self.entries()):
            if i == index:
                return line
        return None

    def finish(self) -> None:
        """Write out what is buffered once every row is added."""
        self._file.flush()

    def close(self) -> None:
        """Delete the temp file."""
        _discard(self._file)


class ArrowSpool:
    """Typed rows as Arrow record batches (IPC stream) in a temp file; the lines of
    rows are found again in the input when an error needs one."""

    def __init__(self, spec: spi.TableSpec, schema: Any, source: Input, kind: str) -> None:
        import pyarrow as pa

        self._spec = spec
        self._schema = schema
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="kvctl-put-")  # noqa: SIM115 - closed by close()
        self._writer = pa.ipc.new_stream(self._file, schema)
        self._input = source
        self._kind = kind
        self.count = 0

    def add(self, batch: Any) -> None:
        """Append a record batch."""
        self._writer.write_batch(batch)
        self.count += batch.num_rows

    def finish(self) -> None:
        """Close the writer once every batch is added (its last bytes go to the file)."""
        self._writer.close()

    def rows(self, *, distinct: bool = False) -> Iterable[dict[str, Any]]:
        """Every row from the start, as a dict of its columns; rows of every column of
        the spec come as :class:`spi.validated.ValidatedRows` (the load need not check them
        again; ``distinct``: no two share a key, as :meth:`distinct_keys` found)."""
        columns = self._spec.columns
        if set(self._schema.names) == set(columns):
            return ValidatedRows(self._spec, self._batches(columns), arrow=True, distinct_keys=distinct)
        names = self._schema.names
        return (dict(zip(names, values)) for batch in self._batches(names) for values in zip(*arrow_columns(batch)))

    def distinct_keys(self) -> int:
        """How many distinct keys the rows have. Up to :data:`DISTINCT_AT_ONCE` rows their
        key columns are counted in memory; more are first spilled into hash partitions
        of about that many rows each (temp files), counted one at a time: memory stays
        that of :data:`DISTINCT_AT_ONCE` rows whatever the input's length."""
        import pyarrow as pa

        if self.count == 0:
            return 0
        keys = list(self._spec.primary_key)
        if self.count <= DISTINCT_AT_ONCE:
            return _distinct(pa.Table.from_batches(list(self._batches(keys))), keys)
        parts = 1 << (-(-self.count // DISTINCT_AT_ONCE) - 1).bit_length()  # a power of two
        with temp_room(f"the key partitions of {self._input.source}"), contextlib.ExitStack() as stack:
            files = [stack.enter_context(tempfile.TemporaryFile(prefix="kvctl-keys-")) for _ in range(parts)]
            writers: list[Any] = []
            for batch in self._batches(keys):
                if not writers:
                    writers = [stack.enter_context(pa.ipc.new_stream(f, batch.schema)) for f in files]
                for part, rows in enumerate(_partitions(batch, parts)):
                    writers[part].write_batch(rows)
            for writer in writers:
                writer.close()
            total = 0
            for f in files:
                f.seek(0)
                total += _distinct(pa.ipc.open_stream(f).read_all(), keys)
        return total

    def _batches(self, columns: Sequence[str]) -> Iterator[Any]:
        import pyarrow as pa

        self._file.seek(0)
        for batch in pa.ipc.open_stream(self._file):
            yield batch.select(list(columns))

    def line_of(self, index: int) -> int | None:
        """The input line of the ``index``-th row (0-based)."""
        return _line_of(self._input, self._kind, index)

    def close(self, *, keep_input: bool = False) -> None:
        """Delete the temp file (and the input's copy, unless ``keep_input``)."""
        _discard(self._file)
        if not keep_input:
            self._input.close()


def _discard(file: IO[bytes]) -> None:
    """Close (so delete) a temp file; a flush that fails there (no room left) is not
    the error to report: the write that met it first is."""
    with contextlib.suppress(OSError):
        file.close()


DISTINCT_AT_ONCE = 2_000_000
"""Rows whose keys ``put --file`` counts in memory at once (about 100 MB of key
columns at most); a longer input is counted in hash partitions of this size."""


def _distinct(table: Any, keys: list[str]) -> int:
    """How many distinct values the ``keys`` columns of an Arrow table hold."""
    return int(table.group_by(keys).aggregate([]).num_rows) if table.num_rows else 0


def _partitions(batch: Any, parts: int) -> Iterator[Any]:
    """The rows of a record batch of key columns in ``parts`` (a power of two) groups
    by a hash of their key: equal keys always land in the same group."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = [column.to_pylist() for column in batch.columns]
    hashes = pa.array(map(hash, zip(*values)) if len(values) > 1 else map(hash, values[0]), pa.int64())
    part = pc.bit_wise_and(hashes, parts - 1)
    for i in range(parts):
        yield batch.filter(pc.equal(part, i))


def _line_of(source: Input, kind: str, index: int) -> int | None:
    for i, (line, _) in enumerate(source.records(kind)):
        if i == index:
            return line
    return None


def check(spec: spi.TableSpec, path: str, fmt: str | None, text: TextOptions | None = None) -> Spool | ArrowSpool:
    """Pass 1: read, type and validate the whole input into a spool."""
    source = Input(path, text)
    try:
        with open_input(source.path) as stream:
            kind = choose_format(path, fmt, stream)
        source.text.check_format(kind)
        source.report_renames(kind)
        columnar = _columnar(spec, source, kind)
        if columnar is not None:
            return columnar  # it keeps the input, to find the line of a row that fails to load
        return _reference(spec, source, kind)
    except BaseException:
        source.close()
        raise


def _columnar(spec: spi.TableSpec, source: Input, kind: str) -> ArrowSpool | None:
    """The input typed column by column, or None when the reference reader must decide
    (a file pyarrow cannot parse, JSON records that set different columns); a bad value
    raises its exact error."""
    from kvctl import columnar  # lazy: pyarrow is heavy

    try:
        if kind in ("csv", "tsv"):
            columnar.well_formed(source.path, kind, source.text.separator(kind))
            schema, batches = columnar.read_batches(spec, source.path, kind, source.text)
        else:
            ndjson = _ndjson(source, kind)
            chunks = (
                columnar.ndjson_columns(spec, source.path) if ndjson else columnar.record_columns(source.records(kind))
            )
            schema, batches = columnar.read_json_batches(spec, chunks)
        spool = ArrowSpool(spec, schema, source, kind)
        try:
            with temp_room(f"the spool of {source.source}"):
                for batch in batches:
                    spool.add(batch)
                spool.finish()
        except BaseException:
            spool.close(keep_input=True)
            raise
    except columnar.Undecided as undecided:
        if undecided.index is not None:
            _check_record(spec, source, kind, undecided.index)
        return None  # the reference reader decides
    return spool


def _ndjson(source: Input, kind: str) -> bool:
    """Whether the input is NDJSON (stdin without --format: it starts with ``{``)."""
    if kind != "stdin-json":
        return kind == "ndjson"
    with open(source.path, "rb") as raw:
        return raw.read(1 << 16).lstrip()[:1] == b"{"


def _check_record(spec: spi.TableSpec, source: Input, kind: str, index: int) -> None:
    """The reference reader's check of the ``index``-th record (0-based): raises its
    exact error (line and column)."""
    for i, (line, record) in enumerate(source.records(kind)):
        if i == index:
            coerce(spec, record, kind, source.source, line, source.text.null)
            return


def _reference(spec: spi.TableSpec, source: Input, kind: str) -> Spool:
    """Pass 1 record by record (:mod:`kvctl.inputs`), pickling the typed rows."""
    spool = Spool(spec)
    try:
        with temp_room(f"the spool of {source.source}"):
            for line, record in source.records(kind):
                if spool.count == 0 and kind in ("csv", "tsv"):
                    _check_header(spec, list(record), source.source)
                spool.add(line, coerce(spec, record, kind, source.source, line, source.text.null))
            spool.finish()
    except BaseException:
        spool.close()
        raise
    source.close()  # the spool has every row's line
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
    spool: Spool | ArrowSpool,
    *,
    mode: str,
    batch_size: int,
    source: str,
    progress: Callable[[int], None] | None = None,
    ttl: int | float | None = None,
    distinct: bool = False,
) -> int:
    """Pass 2: load the spooled rows in batches (expiring after ``ttl`` seconds, None:
    the table's ttl; ``distinct``: no two rows share a key); an error about a row
    names its input line (a failure of the store names none), and says so when
    nothing was written (``progress`` counts what was: :mod:`kvctl.partway`)."""
    if "pyarrow" in sys.modules:  # pass 1 parsed with Arrow, whose allocator keeps freed pages for reuse:
        sys.modules["pyarrow"].default_memory_pool().release_unused()  # give them back (130 MB at 10M rows)
    rows = spool.rows(distinct=distinct)
    try:
        return int(table.load(rows, mode=mode, batch_size=batch_size, progress=progress, ttl=ttl))
    except spi.KvError as exc:
        where, message = "", str(exc)
        if exc.row_index is not None:
            line = spool.line_of(exc.row_index)
            where = f"{source} line {line}: " if line is not None else ""
            message = message.removeprefix(f"row {exc.row_index}: ")
        nothing = not exc.rows_written and "nothing was written" not in message
        detail = f"{where}{message}{'; nothing was written' if nothing else ''}"
        if isinstance(exc, spi.RowExistsError):
            raise NotDone(detail) from None
        exc.args = (detail,)
        raise


def report_repeats(rows: int, distinct: int) -> None:
    """On stderr: the input repeated keys (later rows replaced earlier ones)."""
    replaced = rows - distinct
    print(
        f"{rows} rows read, {distinct} distinct keys written ({replaced} replaced an earlier row of the input)",
        file=sys.stderr,
    )


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
    """``--batch-size`` must be a positive integer no larger than ``sys.maxsize``."""
    if not 1 <= batch_size <= sys.maxsize:
        raise CliError(f"--batch-size must be an integer from 1 to {sys.maxsize}, got {describe(batch_size)}")
