"""Exporting the dashboard's current view (its filter and order, every matching row) to
a file: CSV or NDJSON through the CLI's row printer (:mod:`kvctl.output`, so values read
as ``kvctl scan -o csv`` prints them), Parquet through the Arrow schema and batches of
:mod:`spi.arrow` that the Spark export uses (pyarrow is the ``spark`` extra).

Rows stream page by page in bounded memory into a temporary file next to the target,
renamed into place at the end: a failed export leaves no partial file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import spi
from kvctl.errors import CliError
from kvctl.output import OutputFormat, RowPrinter
from spi.arrow import arrow_schema, columns_to_batch
from spi.scanning import transpose

FORMATS = ("csv", "ndjson", "parquet")
"""The export formats, by their file suffix."""
BATCH = 10_000
"""Rows per Parquet record batch (and between progress reports)."""


def format_for(path: str) -> str | None:
    """The format a file name asks for by its suffix (``.jsonl`` is NDJSON), if any."""
    suffix = Path(path).suffix.lower().lstrip(".")
    return {"jsonl": "ndjson", "pq": "parquet"}.get(suffix, suffix if suffix in FORMATS else None)


def export_rows(
    spec: spi.TableSpec,
    rows: Iterable[spi.Row],
    path: str,
    fmt: str,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write ``rows`` to ``path`` in ``fmt``; the number written. The file appears only
    once complete (an existing one is replaced)."""
    if fmt not in FORMATS:
        raise CliError(f"export format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    target = Path(path).expanduser()
    if not target.parent.is_dir():
        raise CliError(f"cannot export to {path}: folder {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(fd)
    try:
        if fmt == "parquet":
            written = _parquet(spec, rows, tmp, progress)
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                written = _text(spec, rows, fh, OutputFormat(fmt), progress)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return written


def _text(
    spec: spi.TableSpec, rows: Iterable[spi.Row], out: Any, fmt: OutputFormat, progress: Callable[[int], None] | None
) -> int:
    printer = RowPrinter(fmt, spec.columns, out=out)
    for row in rows:
        printer.add(row)
        if progress is not None and printer.count % BATCH == 0:
            progress(printer.count)
    printer.close()
    return printer.count


def _parquet(spec: spi.TableSpec, rows: Iterable[spi.Row], path: str, progress: Callable[[int], None] | None) -> int:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise CliError("Parquet export needs pyarrow: pip install 'kvctl[spark]'") from None

    schema = arrow_schema(spec)
    written = 0
    with pq.ParquetWriter(path, schema) as writer:
        batch: list[spi.Row] = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH:
                writer.write_batch(columns_to_batch(transpose(batch, spec.columns), schema))
                written += len(batch)
                batch.clear()
                if progress is not None:
                    progress(written)
        if batch or written == 0:
            writer.write_batch(columns_to_batch(transpose(batch, spec.columns), schema))
            written += len(batch)
    return written


__all__ = ["FORMATS", "export_rows", "format_for"]
