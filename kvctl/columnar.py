"""Input files read and typed column by column in C, exactly as
:func:`kvctl.inputs.coerce` types them field by field.

pyarrow's streaming CSV reader parses the file into batches of text columns. Each
column is then typed by compute kernels for the values whose form is certain to
mean the same thing to pyarrow as to :func:`spi.textvalues.parse_field` (``-12``,
``1.5e3``, ``TRUE``, ``2024-05-01T12:00:00Z``...); every other value (``433.0`` in
an integer column, ``nan``, a padded number, base64 bytes) goes through
``parse_field`` itself, one value at a time, so the typing rules have one source.

pyarrow is more lenient than Python's ``csv`` module on malformed quoting, and says
nothing of line numbers; so a file with a quote character is first read through by
``csv.reader`` (C; it only checks), and anything this module cannot decide (a parse
error, a bad value) is :class:`Undecided`: the caller asks the row-by-row reference
reader (:mod:`kvctl.inputs`) for the exact error with its line and column.

JSON records (NDJSON decoded by msgspec, a JSON array by the reference's streaming
decoder) are typed the same way: a column whose values all have the JSON type its
column type takes (integers for ``long``...) becomes an Arrow array in one call, and
any other value goes through :func:`spi.textvalues.from_json_value`.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import importlib.abc
import itertools
import operator
import sys
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import spi
from kvctl.headers import column_names
from kvctl.inputs import InputError, TextOptions, read_header
from spi.arrow import arrow_schema, arrow_type
from spi.textvalues import from_json_value, parse_field
from spi.types import FieldType, IntegerType, size_limit

if TYPE_CHECKING:
    import pyarrow as pa

BLOCK = 1 << 20
"""Bytes of input per parsed block (a record batch holds about this much text)."""
JSON_CHUNK = 10_000
"""JSON records typed at a time."""

_REAL = r"^[+-]?([0-9]{1,20}(\.[0-9]{0,20})?|\.[0-9]{1,20})([eE][+-]?[0-9]{1,2})?$"
_DATE = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
_TIME = r"[T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?"
_ZONED = rf"^{_DATE}{_TIME}(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
_NAIVE = rf"^{_DATE}({_TIME})?$"
_FLOAT32_MAX = 3.4028234663852886e38
_MIN_MICROS, _MAX_MICROS = -62135596800_000000, 253402300799_999999  # years 1 to 9999, UTC


class Undecided(Exception):
    """The input needs the reference reader: ``index`` is the first record (0-based)
    that may be bad, or None when the file itself could not be parsed."""

    def __init__(self, index: int | None) -> None:
        super().__init__(index)
        self.index = index


def import_arrow() -> None:
    """Import pyarrow for the file readers without numpy and pandas, where they are
    installed (0.1 s and 0.2 s of each ``put --file``; kvctl gives pyarrow no numpy
    or pandas object). pyarrow checks for numpy when it is first imported, and for
    pandas the first time it converts a Python value, importing each to know. So both
    are done here while an import finder refuses the two, and pyarrow does not look
    again. The finder goes at once: code that needs them imports them as usual (and a
    process that imported pyarrow before keeps it as it is)."""
    if "pyarrow" in sys.modules:
        if "pandas" in sys.modules:
            return
        import pyarrow as pa

        with _refusing(("pandas",)):
            pa.scalar(0)
        return
    with _refusing(("numpy", "pandas")):
        import pyarrow as pa
        import pyarrow.compute
        import pyarrow.csv
        import pyarrow.ipc

        pa.scalar(0)


@contextlib.contextmanager
def _refusing(names: tuple[str, ...]) -> Iterator[None]:
    finder = _Refuse(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


class _Refuse(importlib.abc.MetaPathFinder):
    """An import finder that refuses some top-level packages (see :func:`import_arrow`)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"{fullname} is not looked up here", name=fullname)


def well_formed(path: str, kind: str, delimiter: str) -> None:
    """Raise :class:`Undecided` unless Python's ``csv`` (strict) reads the whole file;
    a file without a quote character needs no check (pyarrow and ``csv`` agree on it)."""
    with open(path, "rb") as raw:
        quoted = any(b'"' in chunk for chunk in iter(lambda: raw.read(BLOCK), b""))
    if not quoted:
        return
    try:
        with open(path, encoding="utf-8-sig", newline="") as text:
            reader = csv.reader(text, dialect=_dialect(kind), delimiter=delimiter, strict=True)
            collections.deque(reader, maxlen=0)  # read through in C, keeping nothing
    except (csv.Error, UnicodeDecodeError):
        raise Undecided(None) from None


def _dialect(kind: str) -> str:
    return "excel" if kind == "csv" else "excel-tab"


def read_batches(
    spec: spi.TableSpec, path: str, kind: str, text: TextOptions
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema and the typed record batches of a well-formed CSV/TSV file (see
    :func:`well_formed`; fields split at ``text.separator``, ``text.null`` fields null);
    the columns are the header's column names (:func:`kvctl.headers.column_names`),
    typed as the spec says. Raises
    :class:`Undecided` when pyarrow cannot parse the file (and for the first bad record
    while iterating)."""
    import_arrow()
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    delimiter = text.separator(kind)
    parse = pa_csv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
    try:
        written = read_header(path, kind, delimiter)
        header = column_names(written)
        if any("\n" in h or "\r" in h for h in written) or not set(spec.primary_key) <= set(header) <= set(
            spec.columns
        ):
            raise Undecided(None)  # no header, or a bad one: the reference reader says what is wrong
        read = pa_csv.ReadOptions(
            block_size=_block_size(path), use_threads=False, column_names=header, skip_rows=1
        )  # the header's column names (kvctl.headers), not the text written
        nulls = [] if text.null is None else [text.null]
        convert = pa_csv.ConvertOptions(
            column_types=dict.fromkeys(header, pa.string()),
            null_values=nulls,
            strings_can_be_null=bool(nulls),
            quoted_strings_can_be_null=bool(nulls),
        )
        reader = pa_csv.open_csv(path, read_options=read, parse_options=parse, convert_options=convert)
    except (pa.ArrowException, UnicodeDecodeError, csv.Error):
        raise Undecided(None) from None
    schema = arrow_schema(spec, header)
    return schema, _typed(spec, schema, reader)


def _block_size(path: str) -> int:
    """pyarrow's block size for ``path``: :data:`BLOCK`, or more than its longest line
    (a record must fit in one block; one spanning several long lines still does not,
    and goes to the reference reader)."""
    longest = run = 0  # the longest line seen; the length of the one being read
    with open(path, "rb") as raw:
        while chunk := raw.read(BLOCK):
            first = chunk.find(b"\n")
            if first < 0:
                run += len(chunk)
                continue
            longest = max(longest, run + first)  # a line inside a chunk is shorter than BLOCK
            run = len(chunk) - chunk.rfind(b"\n") - 1
    return max(longest, run) + BLOCK


def _typed(spec: spi.TableSpec, schema: pa.Schema, reader: Any) -> Iterator[pa.RecordBatch]:
    """The typed record batches of a CSV/TSV reader's text batches; a batch's columns
    are typed two at a time (Arrow's kernels release the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    header = schema.names
    start = 0
    with ThreadPoolExecutor(2, thread_name_prefix="kvctl-typing") as pool:
        while True:
            try:
                texts = reader.read_next_batch()
            except StopIteration:
                return
            except pa.ArrowException:
                raise Undecided(None) from None
            typed = list(pool.map(partial(typed_column, spec), header, texts.columns))
            yield _record_batch(schema, typed, start)
            start += texts.num_rows


def typed_column(spec: spi.TableSpec, column: str, texts: pa.Array) -> tuple[pa.Array, int | None]:
    """The CSV/TSV texts of ``column`` as typed values, and the position of the first
    value ``parse_field`` refuses (None: all good; its value in the result is null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ftype = spec.type_of(column)
    in_key = spec.is_key(column)
    if in_key and texts.null_count:  # a --null value in a key column: the reference says why not
        return texts, _first(pc.is_null(texts))
    if ftype is FieldType.STRING:
        odd = _odd_strings(spec, column, texts)
        return texts, _first(pc.or_(odd, pc.equal(texts, "")) if in_key else odd)
    target = arrow_type(ftype)
    typed, fast = _fast(ftype, texts, target)
    # Empty texts are null (left so by _fast), except in a key column: parse_field says why not.
    rest = pc.invert(fast) if in_key else pc.and_(pc.invert(fast), pc.not_equal(texts, ""))
    if not pc.any(rest).as_py():
        return typed, None
    positions = pc.indices_nonzero(rest).to_pylist()
    values = []
    for position, text in zip(positions, texts.take(positions).to_pylist()):
        try:
            values.append(parse_field(spec, column, text))
        except spi.KvError:
            return typed, position
    return pc.replace_with_mask(typed, rest, pa.array(values, type=target)), None


Columns = dict[str, list[Any]]
"""A chunk of JSON records by column: the columns the records set, each one's values."""


def ndjson_columns(spec: spi.TableSpec, path: str) -> Iterator[Columns]:
    """The records of an NDJSON file decoded by msgspec (C) into columns, a block of
    lines at a time. Raises :class:`Undecided` for anything Python's json and the
    reference reader might take differently (a line msgspec refuses: bad JSON,
    ``NaN``, a byte-order mark, a lone surrogate; a record that is not an object or
    names an unknown column; a carriage return that is not part of a line's end: the
    reference splits lines there too) and when records set different columns."""
    import msgspec

    fields = [(f"f{i}", Any, msgspec.UNSET) for i in range(len(spec.columns))]
    names = dict(zip((f for f, _, _ in fields), spec.columns))
    record = msgspec.defstruct("Record", fields, rename=names, forbid_unknown_fields=True, gc=False)
    decode = msgspec.json.Decoder(record).decode
    getters = [operator.attrgetter(f) for f in names]
    header: list[str] | None = None
    with open(path, "rb") as raw:
        while lines := raw.readlines(BLOCK):
            if any(b"\r" in line for line in lines) and sum(map(bytes.count, lines, itertools.repeat(b"\r"))) != sum(
                map(bytes.endswith, lines, itertools.repeat(b"\r\n"))
            ):
                raise Undecided(None)
            try:
                records = list(map(decode, filter(bytes.strip, lines)))
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                raise Undecided(None) from None
            if not records:
                continue
            columns = {c: list(map(get, records)) for c, get in zip(spec.columns, getters)}
            if header is None:
                header = [c for c in spec.columns if columns[c][0] is not msgspec.UNSET]
            for column, values in columns.items():
                unset = values.count(msgspec.UNSET)
                if unset != (0 if column in header else len(values)):
                    raise Undecided(None)
            yield {c: columns[c] for c in header}


def record_columns(records: Iterator[tuple[int, dict[str, Any]]]) -> Iterator[Columns]:
    """The records of :func:`kvctl.inputs.read_records` by column, a chunk at a time.
    Raises :class:`Undecided` when records set different columns; a reader's error
    (bad JSON) comes after a chunk of the records before it, so that a bad value among
    them is reported first, as the reference reports it."""
    header: list[str] | None = None
    while True:
        chunk: list[dict[str, Any]] = []
        failure: InputError | None = None
        try:
            chunk.extend(record for _, record in itertools.islice(records, JSON_CHUNK))
        except InputError as exc:
            failure = exc
        if chunk:
            header = header or list(chunk[0])
            if not header or set(map(len, chunk)) != {len(header)}:  # {}: no key, the reference says so
                raise Undecided(None)
            try:
                rows = list(map(operator.itemgetter(*header), chunk))
            except KeyError:
                raise Undecided(None) from None
            yield dict(zip(header, map(list, zip(*rows)))) if len(header) > 1 else {header[0]: rows}
        if failure is not None:
            raise failure
        if len(chunk) < JSON_CHUNK:
            return


def read_json_batches(spec: spi.TableSpec, chunks: Iterator[Columns]) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema and the typed record batches of chunks of JSON records by column.
    Raises :class:`Undecided` when there is no record or a column is not the spec's
    (the reference says which), and for the first record that may be bad while
    iterating."""
    import_arrow()
    first = next(chunks, {})
    if not first or not set(spec.primary_key) <= set(first) <= set(spec.columns):
        raise Undecided(None)
    header = [c for c in spec.columns if c in first]
    schema = arrow_schema(spec, header)
    return schema, _json_typed(spec, schema, itertools.chain([first], chunks))


def _json_typed(spec: spi.TableSpec, schema: pa.Schema, chunks: Iterator[Columns]) -> Iterator[pa.RecordBatch]:

    start = 0
    for chunk in chunks:
        batch = _record_batch(schema, [json_column(spec, name, chunk[name]) for name in schema.names], start)
        yield batch
        start += batch.num_rows


def json_column(spec: spi.TableSpec, column: str, values: list[Any]) -> tuple[pa.Array, int | None]:
    """JSON values of ``column`` as typed values, and the position of the first value
    :func:`spi.textvalues.from_json_value` refuses (None: all good)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ftype = spec.type_of(column)
    target = arrow_type(ftype)
    kinds = ftype.impl.json_kinds | (set() if spec.is_key(column) else {type(None)})
    if not set(map(type, values)) <= kinds:
        return _json_exactly(spec, column, values, target)
    source = {FieldType.FLOAT: pa.float64(), FieldType.DOUBLE: pa.float64(), FieldType.TIMESTAMP: pa.string()}
    try:
        typed = raw = pa.array(values, source.get(ftype, target))
    except (pa.ArrowException, OverflowError, UnicodeError):  # out of range, a lone surrogate...
        return _json_exactly(spec, column, values, target)
    if ftype is FieldType.STRING:
        return typed, _first(_odd_strings(spec, column, typed))
    if ftype is FieldType.TIMESTAMP:
        typed, fast = _timestamps(typed, target)
    elif ftype in (FieldType.FLOAT, FieldType.DOUBLE):
        if spec.is_key(column) and pc.any(pc.is_nan(typed)).as_py():
            return _json_exactly(spec, column, values, target)
        typed, fast = _reals(typed, pc.is_valid(typed), target)
    else:
        return typed, None
    rest = pc.and_(pc.invert(fast), pc.is_valid(raw))  # null stays null
    if not pc.any(rest).as_py():
        return typed, None
    positions = pc.indices_nonzero(rest).to_pylist()
    exact, bad = _json_exactly(spec, column, [values[i] for i in positions], target)
    if bad is not None:
        return typed, positions[bad]
    return pc.replace_with_mask(typed, rest, exact), None


def _json_exactly(
    spec: spi.TableSpec, column: str, values: list[Any], target: pa.DataType
) -> tuple[pa.Array, int | None]:
    """``values`` through :func:`from_json_value`, one by one: the typed array, or
    the position of the first it refuses."""
    import pyarrow as pa

    typed = []
    for position, value in enumerate(values):
        try:
            typed.append(from_json_value(spec, column, value))
        except spi.KvError:
            return pa.nulls(len(values), target), position
    return pa.array(typed, target), None


def _odd_strings(spec: spi.TableSpec, column: str, texts: pa.Array) -> pa.Array:
    """Where a string is one :func:`spi.types.validate_value` refuses (a NUL, too long)."""
    import pyarrow.compute as pc

    limit = size_limit(spec.is_key(column), spec.is_indexed(column))
    return pc.or_(pc.greater(pc.binary_length(texts), limit), pc.match_substring(texts, "\x00"))


def _fast(ftype: FieldType, texts: pa.Array, target: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """``(typed, fast)``: the values of the texts typed in C where ``fast`` is true
    (null elsewhere)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    null = pa.scalar(None, target)
    if ftype is FieldType.BOOL:
        lowered = pc.ascii_lower(texts)
        true = pc.equal(lowered, "true")
        fast = pc.or_(true, pc.equal(lowered, "false"))
        return pc.if_else(fast, true, null), fast
    if ftype is FieldType.BYTES:
        return _none(len(texts), target)
    if ftype is FieldType.TIMESTAMP:
        return _timestamps(texts, target)
    impl = ftype.impl
    if isinstance(impl, IntegerType):
        fast = pc.match_substring_regex(texts, impl.text_pattern)
        return pc.if_else(fast, pc.cast(pc.if_else(fast, texts, "0"), target), null), fast
    fast = pc.match_substring_regex(texts, _REAL)
    typed, fast = _reals(pc.cast(pc.if_else(fast, texts, "0"), pa.float64()), fast, target)
    return pc.if_else(fast, typed, null), fast


def _none(n: int, target: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """``(typed, fast)`` for texts of which none is typed in C."""
    import pyarrow as pa

    return pa.nulls(n, target), pa.repeat(False, n)  # type: ignore[attr-defined]


def _reals(doubles: pa.Array, fast: pa.Array, target: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """Doubles as a float/double column holds them (``-0.0`` as ``0.0``, rounded to
    float32), and ``fast`` less the doubles no float32 holds (the reference says why)."""
    import pyarrow.compute as pc

    doubles = pc.add(doubles, 0.0)  # -0.0 + 0.0 is 0.0
    if target.bit_width == 64:
        return doubles, fast
    fast = pc.and_(fast, pc.fill_null(pc.less_equal(pc.abs(doubles), _FLOAT32_MAX), True))
    return pc.cast(doubles, target, safe=False), fast  # rounds to nearest, as spi.types.to_float32


def _timestamps(texts: pa.Array, target: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """Timestamps with a zone (``Z``, ``+05:30``) and without (UTC; a date is midnight)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    null = pa.scalar(None, target)
    zoned = pc.match_substring_regex(texts, _ZONED)
    naive = pc.match_substring_regex(texts, _NAIVE)
    try:
        with_zone = pc.cast(pc.if_else(zoned, texts, "2000-01-01T00:00:00Z"), target)
        without = pc.cast(pc.cast(pc.if_else(naive, texts, "2000-01-01"), pa.timestamp("us")), target)
    except pa.ArrowInvalid:  # of the right form but no date (2023-02-29): the reference says why
        return _none(len(texts), target)
    fast = pc.or_(zoned, naive)
    typed = pc.if_else(zoned, with_zone, pc.if_else(naive, without, null))
    micros = pc.cast(typed, pa.int64())
    in_range = pc.and_(pc.greater_equal(micros, _MIN_MICROS), pc.less_equal(micros, _MAX_MICROS))
    fast = pc.and_(fast, pc.fill_null(in_range, False))
    return pc.if_else(fast, typed, null), fast


def _first(mask: pa.Array) -> int | None:
    """The position of the first true value of ``mask``, or None."""
    import pyarrow.compute as pc

    if not pc.any(mask).as_py():
        return None
    return int(pc.indices_nonzero(mask)[0].as_py())


def _record_batch(schema: pa.Schema, typed: list[tuple[pa.Array, int | None]], start: int) -> pa.RecordBatch:
    """The typed columns as one record batch; :class:`Undecided` naming the first record
    (counted from ``start``) that a column could not type."""
    import pyarrow as pa

    bad = [b for _, b in typed if b is not None]
    if bad:
        raise Undecided(start + min(bad))
    return pa.RecordBatch.from_arrays([column for column, _ in typed], schema=schema)
