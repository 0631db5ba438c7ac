"""The fixtures every conformance group uses, and small helpers for its assertions."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest

from spi.clock import ManualClock
from spi.testing.fixtures import ORDERS, order_rows
from spi.testing.requirements import required_capabilities, skip_unless_capable

ProviderFactory = Callable[[], Any]


def keys(rows: Any) -> list[tuple[Any, ...]]:
    """(region, id) of ORDERS rows, in the order given."""
    return [(r["region"], r["id"]) for r in rows]


def sorted_keys(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(region, id) of ORDERS rows, in key order."""
    return sorted(keys(rows))


def keys_of(rows: Any, column: str) -> list[Any]:
    """One column of every row, in order."""
    return [r[column] for r in rows]


class ProviderClock(Protocol):
    """What the ``clock`` fixture gives a test: the provider's clock, moved by hand."""

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass on the provider's clock."""

    def now(self) -> dt.datetime:
        """Now on the provider's clock (an aware UTC datetime)."""


class SleepingClock:
    """The ``clock`` fixture of a provider that takes no clock (no ``clock``
    attribute, see :mod:`spi.clock`): time passes for real, so :meth:`advance` sleeps."""

    def advance(self, seconds: float) -> None:
        """Sleep ``seconds``."""
        time.sleep(seconds)

    def now(self) -> dt.datetime:
        """The wall clock's now."""
        return dt.datetime.now(dt.UTC)


class ConformanceBase:
    """Fixtures of the suite; a provider's test class supplies ``provider_factory``."""

    @pytest.fixture
    def provider_factory(self) -> ProviderFactory:  # pragma: no cover - must be overridden
        raise NotImplementedError("define a provider_factory fixture returning a callable that opens a fresh provider")

    @pytest.fixture
    def provider(self, provider_factory: ProviderFactory) -> Iterator[Any]:
        """A fresh, empty provider, closed after the test."""
        p = provider_factory()
        try:
            yield p
        finally:
            p.close()

    @pytest.fixture
    def clock(self, provider: Any) -> ProviderClock:
        """A :class:`~spi.clock.ManualClock` set as ``provider.clock``: a test about
        expiry moves it past a ttl (``clock.advance(seconds)``) instead of sleeping the
        ttl out. For a provider that takes no clock, a :class:`SleepingClock`."""
        if not hasattr(provider, "clock"):
            return SleepingClock()
        manual = ManualClock()
        provider.clock = manual
        return manual

    @pytest.fixture
    def provider_url(self, provider: Any) -> str:
        """A URL that opens ``provider``'s store again (in this process or another).
        Override it when ``provider.url`` masks a password."""
        return str(provider.url)

    @pytest.fixture
    def orders(self, provider: Any) -> Any:
        """The ORDERS table loaded with :func:`order_rows`, as an auto-commit handle."""
        provider.admin.create(ORDERS)
        t = provider.table("orders")
        t.load(order_rows())
        return t

    @pytest.fixture(autouse=True)
    def _requirements(self, request: pytest.FixtureRequest) -> None:
        """Report a test whose capabilities the provider lacks as not applicable."""
        if required_capabilities(request.function):
            skip_unless_capable(request.getfixturevalue("provider"), request.function)
