"""What every batch read of a kvctl table carries from the driver to its tasks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceReader


@dataclass(eq=False)
class TableReader(DataSourceReader):
    """A batch read of one table: the store, the table's spec (JSON), the number of
    read tasks ``n``, rows per Arrow batch, and an optional Spark accumulator counting
    the rows read. Subclasses add what selects their rows and plan the tasks."""

    url: str
    spec_json: str
    n: int
    batch_rows: int
    counter: Any = None


__all__ = ["TableReader"]
