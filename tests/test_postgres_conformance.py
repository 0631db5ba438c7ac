"""The conformance suite and the differential test (200 sequences) on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from spi.testing import ConformanceTests, DifferentialTests


class TestPostgresConformance(ConformanceTests):
    @pytest.fixture
    def provider_factory(self, pg_factory: Callable[..., Any]) -> Callable[[], Any]:
        return pg_factory


class TestPostgresDifferential(DifferentialTests):
    """200 random operation sequences, each compared with the reference model (spi.testing.reference)."""

    @pytest.fixture
    def provider_factory(self, pg_factory: Callable[..., Any]) -> Callable[[], Any]:
        return pg_factory
