"""The conformance suite and the differential test on the RocksDB provider."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import spi
from spi.testing import ConformanceTests, DifferentialTests


def _factory(root: Path) -> Callable[[], Any]:
    counter = itertools.count()
    return lambda: spi.connect(f"rocksdb://{root}/db{next(counter)}")


class TestRocksDBConformance(ConformanceTests):
    @pytest.fixture
    def provider_factory(self, tmp_path: Path) -> Callable[[], Any]:
        return _factory(tmp_path)


class TestRocksDBDifferential(DifferentialTests):
    """200 random operation sequences, each compared with the reference model (spi.testing.reference)."""

    @pytest.fixture
    def provider_factory(self, tmp_path: Path) -> Callable[[], Any]:
        return _factory(tmp_path)
