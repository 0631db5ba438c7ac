"""Arrow scans straight from ``COPY (SELECT ...) TO STDOUT (FORMAT csv)``: PostgreSQL
writes text, pyarrow's streaming CSV reader parses it in C++, and no Python object
is made per value (except for ``bytes`` columns, decoded from hex per value).

The COPY holds the connection until it is read to the end, so it runs only in a
transaction nothing else uses (the auto-commit ``scan_arrow``'s own snapshot).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from psycopg import ClientCursor, pq
from psycopg.errors import error_from_result

from providers.postgres.sql import scan_select
from spi.arrow import arrow_schema
from spi.errors import KvError
from spi.table import ScanRequest
from spi.types import FieldType

if TYPE_CHECKING:
    import pyarrow as pa

    from providers.postgres.provider import PgTransaction
    from providers.postgres.table import TableSql

SESSION = (
    "SET LOCAL TimeZone = 'UTC'",
    "SET LOCAL DateStyle = 'ISO, YMD'",
    "SET LOCAL extra_float_digits = 1",  # shortest text that reads back exactly
    "SET LOCAL bytea_output = 'hex'",
    "SET LOCAL client_encoding = 'UTF8'",
)
"""Settings that make the text output parseable exactly (local to the transaction)."""
BLOCK_BYTES = 1 << 20
"""CSV bytes pyarrow parses per block."""


class _CopyStream:
    """A read-only file over the CopyData messages of a COPY TO STDOUT on ``pgconn``."""

    def __init__(self, pgconn: Any) -> None:
        self._pgconn = pgconn
        self._rest = b""
        self.done = False
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left when negative); b"" at the end."""
        parts, have, get = [self._rest], len(self._rest), self._pgconn.get_copy_data
        while (size < 0 or have < size) and not self.done:
            n, data = get(0)
            if n < 0:
                self.done = True
                break
            parts.append(data)
            have += n
        buf = b"".join(parts)
        if size < 0 or len(buf) <= size:
            self._rest = b""
            return buf
        self._rest = buf[size:]
        return buf[:size]

    def at_end(self) -> bool:
        """Whether the COPY produced no (more) bytes (reads ahead one message)."""
        if not self._rest and not self.done:
            n, data = self._pgconn.get_copy_data(0)
            if n < 0:
                self.done = True
            else:
                self._rest = bytes(data)
        return not self._rest

    def readable(self) -> bool:
        """Always: this is an input stream."""
        return True

    def seekable(self) -> bool:
        """Never."""
        return False

    def close(self) -> None:
        """Mark closed (the COPY is finished by :func:`copy_arrow`)."""
        self.closed = True


def copy_sql(tx: PgTransaction, sql: TableSql, request: ScanRequest, columns: tuple[str, ...]) -> bytes:
    """The COPY statement: the scan's SELECT with every value rendered as a literal by
    psycopg's client-side adaptation (COPY takes no parameters)."""
    stmt = scan_select(sql.table, sql.spec, request.key_range, request.where, columns=columns)
    select = ClientCursor(tx.driver_connection()).mogrify(*tx.compile(stmt))
    return f"COPY ({select}) TO STDOUT WITH (FORMAT csv)".encode()


def copy_arrow(
    tx: PgTransaction, sql: TableSql, request: ScanRequest, columns: tuple[str, ...], batch_size: int
) -> Iterator[pa.RecordBatch]:
    """The scan as record batches of at most ``batch_size`` rows, typed by the spec.

    Stopping early reads the rest of the COPY and discards it (the connection must
    leave COPY mode before the transaction ends)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    schema = arrow_schema(sql.spec, columns)
    binary = [i for i, c in enumerate(columns) if sql.spec.type_of(c) is FieldType.BYTES]
    text_schema = pa.schema([pa.field(f.name, pa.string()) if i in binary else f for i, f in enumerate(schema)])
    statement = copy_sql(tx, sql, request, columns)
    with tx.errors():
        conn = tx.driver_connection()
        for setting in SESSION:
            conn.execute(setting)
        pgconn = conn.pgconn
        pgconn.send_query(statement)
        while pgconn.flush():
            pass
        _check(pgconn, pq.ExecStatus.COPY_OUT)
    stream = _CopyStream(pgconn)
    try:
        with tx.errors():
            if stream.at_end():
                return
            reader = pacsv.open_csv(
                stream,
                read_options=pacsv.ReadOptions(column_names=schema.names, block_size=BLOCK_BYTES),
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=pacsv.ConvertOptions(
                    column_types=text_schema,
                    null_values=[""],  # only an unquoted empty field is NULL; "" is an empty string
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                    true_values=["t"],
                    false_values=["f"],
                ),
            )
        while True:
            with tx.errors():
                batch = next(reader, None)
            if batch is None:
                break
            batch = _typed(batch, binary, schema)
            for start in range(0, batch.num_rows, batch_size):
                yield batch.slice(start, batch_size)
    finally:
        with tx.errors():
            while not stream.done:
                stream.read(BLOCK_BYTES)
            _check(pgconn, pq.ExecStatus.COMMAND_OK)


def _typed(batch: pa.RecordBatch, positions: list[int], schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``schema`` (key columns non-nullable), its hex text
    columns at ``positions`` (``\\x0a1b``) decoded into binary."""
    import pyarrow as pa

    arrays = list(batch.columns)
    for i in positions:
        values = arrays[i].to_pylist()
        arrays[i] = pa.array([None if v is None else bytes.fromhex(v[2:]) for v in values], pa.binary())
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _check(pgconn: Any, status: pq.ExecStatus) -> None:
    """Read the pending results (all of them unless COPY OUT started); raise the
    server's error unless the result has ``status``."""
    result = pgconn.get_result()
    if result is None or result.status != pq.ExecStatus.COPY_OUT:
        while (more := pgconn.get_result()) is not None:
            result = more
    if result is not None and result.status == pq.ExecStatus.FATAL_ERROR:
        raise error_from_result(result, encoding="utf-8")
    if result is None or result.status != status:
        raise KvError(f"unexpected COPY state: {None if result is None else result.status.name}")
