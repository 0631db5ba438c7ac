"""Real public data for the tests: the CSV files the ``vega_datasets`` package ships
(the ``dev`` extra; read from its directory, without importing it, so no pandas and no
network): ``airports.csv`` (3,376 US airports, ``NA`` for a missing city and state),
``seattle-weather.csv``, ``stocks.csv``, ``la-riots.csv``."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

from spi.testing.requirements import need


def vega_csv(name: str) -> Path:
    """The path of one of vega_datasets' CSV files (the test is skipped, or failed under
    KVCTL_REQUIRE_ALL=1, without the package)."""
    spec = importlib.util.find_spec("vega_datasets")
    need("the vega_datasets package", spec is not None, "pip install '.[dev]'")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "_data" / name
    need(f"vega_datasets' {name}", path.is_file(), f"{path} is missing")
    return path


def csv_rows(path: Path, null: str = "NA") -> list[dict[str, str | None]]:
    """The records of a CSV file as the csv module reads them, ``null`` as None."""
    with path.open(newline="", encoding="utf-8") as f:
        return [{k: None if v == null else v for k, v in row.items()} for row in csv.DictReader(f)]
