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

``DifferentialTests`` also needs ``reference_factory`` (usually ``memory://``) and
runs the same random operation sequences on both, comparing every result and
every error class.
"""

from spi.testing.differential import DifferentialTests
from spi.testing.suite import ConformanceTests

__all__ = ["ConformanceTests", "DifferentialTests"]
