"""The conformance suite on the in-memory provider, and the differential test against the reference model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import spi
from spi.testing import ConformanceTests, DifferentialTests
from spi.testing.fixtures import ORDERS


class TestMemoryConformance(ConformanceTests):
    @pytest.fixture
    def provider_factory(self) -> Callable[[], Any]:
        return lambda: spi.connect("memory://")


class TestMemoryDifferential(DifferentialTests):
    """200 random operation sequences, each compared with the reference model (spi.testing.reference)."""

    @pytest.fixture
    def provider_factory(self) -> Callable[[], Any]:
        return lambda: spi.connect("memory://")


def test_fresh_memory_stores_are_private() -> None:
    with spi.connect("memory://") as p:
        p.admin.create(ORDERS)
        with spi.connect("memory://") as other:
            assert other.admin.list_tables() == []


def test_create_false_opens_a_fresh_store_too() -> None:
    # A memory:// store exists as soon as it is opened: there is nothing to create or to misspell.
    with spi.connect("memory://", create=False) as p:
        assert p.admin.list_tables() == []
        p.admin.create(ORDERS)
        assert p.admin.list_tables() == ["orders"]
