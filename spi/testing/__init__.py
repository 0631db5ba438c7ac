"""The conformance suite every provider runs unchanged (model: SQLAlchemy's
dialect compliance suite).

A provider's tests subclass the suites and supply one fixture,
``provider_factory``: a callable that opens a fresh, empty provider each call::

    import pytest, spi
    from spi.testing import ConformanceTests, DifferentialTests

    class TestMine(ConformanceTests):
        @pytest.fixture
        def provider_factory(self, tmp_path):
            return lambda: spi.connect(f"mystore://{tmp_path}/{uuid4()}")

The suite is split by area (:mod:`spi.testing.conformance`: admin, writes, limits,
values, reads, filters, indexes, paging, loads, transactions, threads, processes,
durability, verify); a group that needs a capability (:class:`spi.Capability`) runs
only on providers that declare it and is reported as skipped, "not applicable", on
the others. The process and durability groups reopen the store from the
``provider_url`` fixture (default: ``provider.url``; override it when that URL
masks a password).

``DifferentialTests`` runs the same random operation sequences on the provider and
on ``reference_factory`` (default: :class:`spi.testing.reference.ReferenceProvider`,
a plain model that shares no code with the engines), comparing every result,
version and error class.
"""

from spi.testing.conformance import ConformanceTests
from spi.testing.differential import DifferentialTests

__all__ = ["ConformanceTests", "DifferentialTests"]
