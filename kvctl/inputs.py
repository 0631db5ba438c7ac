"""Reading rows from JSON, NDJSON, CSV and TSV files (or stdin) with their line numbers.

Each reader yields ``(line, record)``: the 1-based line where the record starts
(the CSV header is line 1) and a mapping column → raw value (a JSON value, or the
text of a CSV/TSV field). :func:`coerce` turns a record into a typed row. Readers
stream: a JSON array is decoded one element at a time.
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import spi
from kvctl import jsontext
from kvctl.errors import CliError
from kvctl.headers import column_names
from spi.textvalues import from_json_value, parse_field
from spi.types import MAX_VALUE_BYTES
from spi.validate import validate_row

FORMATS = ("json", "ndjson", "csv", "tsv")
_SUFFIXES = {".json": "json", ".ndjson": "ndjson", ".jsonl": "ndjson", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv"}
_CHUNK = 1 << 16
MAX_FIELD = 4 * -(-MAX_VALUE_BYTES // 3) + 1024
"""The longest CSV/TSV field read, in characters: the largest value (16 MiB) written
as base64, with room for quotes and padding; a longer one is an error naming its line."""
csv.field_size_limit(MAX_FIELD)  # Python's default, 128 KiB, is far below the largest value

Record = dict[str, Any]


@dataclass(frozen=True)
class TextOptions:
    """How CSV/TSV text is read: ``null`` (a field equal to it is null in any column),
    ``delimiter`` (None: ``,`` for CSV, tab for TSV) and the file's ``encoding``."""

    null: str | None = None
    delimiter: str | None = None
    encoding: str = "utf-8"

    @classmethod
    def of(cls, null: str | None, delimiter: str | None, encoding: str | None) -> TextOptions:
        """The options given on the command line, checked (bad ones exit 2)."""
        if delimiter is not None and (len(delimiter) != 1 or delimiter in '"\r\n'):
            raise CliError(f"--delimiter must be one character (not a quote or a line break), not {delimiter!r}")
        name = encoding or "utf-8"
        try:
            name = codecs.lookup(name).name
        except LookupError:
            raise CliError(
                f"unknown --encoding {encoding!r} (a Python codec name: utf-8, latin-1, cp1252, utf-16...)"
            ) from None
        return cls(null, delimiter, name)

    def check_format(self, kind: str) -> None:
        """``--null`` and ``--delimiter`` apply to CSV/TSV only."""
        if kind not in ("csv", "tsv") and (self.null is not None or self.delimiter is not None):
            raise CliError("--null and --delimiter apply to csv and tsv input")

    def separator(self, kind: str) -> str:
        """The field delimiter of a ``kind`` (csv/tsv) file."""
        return self.delimiter or ("," if kind == "csv" else "\t")


class InputError(CliError):
    """A bad input file: names the file, the line and, where known, the column (exit 2)."""

    def __init__(self, source: str, line: int | None, message: str, column: str | None = None) -> None:
        where = source if line is None else f"{source} line {line}"
        if column is not None:
            where += f", column {column!r}"
        super().__init__(f"{where}: {message}")
        self.line = line
        self.column = column


def open_input(path: str) -> TextIO:
    """Open ``path`` (``-`` is stdin) as UTF-8 text, newlines untranslated (as csv needs)."""
    if path == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8-sig", newline="")
    try:
        return open(path, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None


def choose_format(path: str, given: str | None, stream: TextIO) -> str:
    """``--format``, else the file's suffix, else (stdin) ``[`` means json and ``{`` ndjson."""
    if given is not None:
        if given not in FORMATS:
            raise CliError(f"--format must be one of {', '.join(FORMATS)}, not {given!r}")
        return given
    if path != "-":
        fmt = _SUFFIXES.get(Path(path).suffix.lower())
        if fmt is None:
            raise CliError(f"cannot tell the format of {path} from its name; pass --format {'|'.join(FORMATS)}")
        return fmt
    return "stdin-json"


def read_records(stream: TextIO, fmt: str, source: str, delimiter: str | None = None) -> Iterator[tuple[int, Record]]:
    """The records of ``stream`` in format ``fmt`` with their starting line numbers
    (CSV/TSV fields split at ``delimiter``, default ``,`` or tab)."""
    try:
        if fmt == "stdin-json":
            yield from _sniffed(stream, source)
        elif fmt == "json":
            yield from _json_array(stream, source)
        elif fmt == "ndjson":
            yield from _ndjson(stream, source)
        else:
            yield from _delimited(stream, source, "excel" if fmt == "csv" else "excel-tab", delimiter)
    except UnicodeDecodeError:
        raise InputError(source, None, "is not UTF-8 text") from None


def _sniffed(stream: TextIO, source: str) -> Iterator[tuple[int, Record]]:
    """stdin without --format: ``[`` starts a JSON array, anything else is NDJSON."""
    head = ""
    while True:
        char = stream.read(1)
        head += char
        if not char or not char.isspace():
            break
    if head.strip() == "[":
        yield from _json_array(stream, source, head)
    elif head.strip() in ("{", ""):
        yield from _ndjson(stream, source, head)
    else:
        raise InputError(source, None, "input from stdin needs --format csv or tsv (it is not JSON or NDJSON)")


def _record(value: Any, source: str, line: int) -> Record:
    if not isinstance(value, dict):
        raise InputError(source, line, f"expected a JSON object (one row), got {type(value).__name__}")
    return value


def _ndjson(stream: TextIO, source: str, head: str = "") -> Iterator[tuple[int, Record]]:
    """One object per line; ``head`` is text already read from the stream."""
    lines = itertools.chain((head + stream.readline()).splitlines(keepends=True), stream) if head else stream
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            value = jsontext.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(source, number, f"invalid JSON at character {exc.colno}: {exc.msg}") from None
        yield number, _record(value, source, number)


def _json_array(stream: TextIO, source: str, head: str = "") -> Iterator[tuple[int, Record]]:
    """Decode ``[obj, obj, ...]`` one element at a time (memory: one element + a chunk)."""
    decoder = json.JSONDecoder()
    buf, pos, line, eof = head, 0, 1, False

    def fill() -> bool:
        nonlocal buf, pos, eof
        chunk = "" if eof else stream.read(_CHUNK)
        eof = eof or not chunk
        buf, pos = buf[pos:] + chunk, 0
        return bool(chunk)

    def peek() -> str:
        """The next non-space character ('' at the end), counting lines as it skips."""
        nonlocal pos, line
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                line += buf[pos] == "\n"
                pos += 1
            if pos < len(buf) or not fill():
                return buf[pos] if pos < len(buf) else ""

    if peek() != "[":
        raise InputError(source, line, "a JSON file must hold an array of row objects ([{...}, ...])")
    pos += 1
    first = True
    while True:
        c = peek()
        if c == "]" and first:
            pos += 1
            break
        if not first:
            if c == "]":
                pos += 1
                break
            if c != ",":
                raise InputError(source, line, "expected ',' or ']' between rows")
            pos += 1
            peek()
        start = line
        while True:
            try:
                value, end = decoder.raw_decode(buf, pos)
                if end < len(buf) or eof:
                    break
            except RecursionError:
                raise InputError(source, start, f"invalid JSON: {jsontext.TOO_DEEP}") from None
            except json.JSONDecodeError as exc:
                if eof:
                    at = start + buf.count("\n", pos, exc.pos)
                    raise InputError(source, at, f"invalid JSON: {exc.msg}") from None
            except ValueError:  # an integer too long to convert
                error = jsontext.too_long(buf, pos)
                raise InputError(
                    source, start + buf.count("\n", pos, error.pos), f"invalid JSON: {error.msg}"
                ) from None
            fill()
        line += buf.count("\n", pos, end)
        pos = end
        first = False
        yield start, _record(value, source, start)
    if peek() != "":
        raise InputError(source, line, "unexpected text after the closing ']'")


def read_header(path: str, kind: str, delimiter: str) -> list[str]:
    """The header of the CSV/TSV file at ``path`` (UTF-8) as written (``[]``: none);
    a malformed one raises ``csv.Error``."""
    with open(path, encoding="utf-8-sig", newline="") as text:
        dialect = "excel" if kind == "csv" else "excel-tab"
        return next(csv.reader(text, dialect=dialect, delimiter=delimiter, strict=True), [])


def _delimited(stream: TextIO, source: str, dialect: str, delimiter: str | None) -> Iterator[tuple[int, Record]]:
    """CSV/TSV records, keyed by the header's column names (:func:`kvctl.headers.column_names`);
    a record (and an error in it) is named by the line it starts on."""
    reader = csv.reader(stream, dialect=dialect, strict=True, delimiter=delimiter or csv.get_dialect(dialect).delimiter)
    start = 1  # the line the record being read starts on
    try:
        written = next(reader, None)
        if written is None:
            return
        header = column_names(written)
        start = reader.line_num + 1
        for fields in reader:
            line, start = start, reader.line_num + 1
            if not fields:
                continue
            if len(fields) != len(header):
                raise InputError(source, line, f"has {len(fields)} fields; the header has {len(header)}")
            yield line, dict(zip(header, fields))
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise InputError(
                source, start, f"a field is longer than {MAX_FIELD} characters (values hold at most 16 MiB)"
            ) from None
        raise InputError(source, start, f"malformed {'CSV' if dialect == 'excel' else 'TSV'}: {exc}") from None


def coerce(
    spec: spi.TableSpec, record: Record, fmt: str, source: str, line: int, null: str | None = None
) -> dict[str, Any]:
    """A typed, validated row from a raw record (a CSV/TSV field equal to ``null`` is
    null); errors name the line and column."""
    convert = parse_field if fmt in ("csv", "tsv") else from_json_value
    row: dict[str, Any] = {}
    for column, raw in record.items():
        try:
            row[column] = None if null is not None and raw == null else convert(spec, column, raw)
        except spi.KvError as exc:
            raise InputError(source, line, str(exc), column) from None
    try:
        return validate_row(spec, row)
    except spi.KvError as exc:
        raise InputError(source, line, str(exc), exc.column) from None
