"""The conformance suite: every operation, option and error of SPI.md, one module per
area, each a mixin class a provider may also run alone (with :class:`ConformanceBase`).

Groups that need more than the core contract are gated by capability
(:mod:`spi.testing.requirements`): threads (and isolation's thread tests), processes, durability, verify and the
change-feed groups (changes, watch, change processes, change durability), and
expiry (expiry, expiry with a change feed, sweeps of a frozen table), durability of a
frozen table.
"""

from spi.testing.conformance.admin import AdminTests
from spi.testing.conformance.aggregates import AggregateTests
from spi.testing.conformance.base import ConformanceBase
from spi.testing.conformance.changes import ChangeTests
from spi.testing.conformance.copies import CopyTests
from spi.testing.conformance.expiry import ExpiryChangeTests, ExpiryStagingTests, ExpiryTests
from spi.testing.conformance.feedviews import ChangeViewTests
from spi.testing.conformance.filters import FilterTests
from spi.testing.conformance.freeze import FreezeDurabilityTests, FreezeExpiryTests, FreezeTests
from spi.testing.conformance.indexes import IndexTests
from spi.testing.conformance.isolation import IsolationTests
from spi.testing.conformance.limits import LimitTests
from spi.testing.conformance.loads import LoadTests
from spi.testing.conformance.overwrites import OverwriteChangeTests, OverwriteExpiryTests
from spi.testing.conformance.paging import PagingTests
from spi.testing.conformance.processes import DurabilityTests, ProcessTests
from spi.testing.conformance.reads import ReadTests
from spi.testing.conformance.threads import ThreadTests
from spi.testing.conformance.transactions import TransactionTests
from spi.testing.conformance.values import ValueTests
from spi.testing.conformance.verify import VerifyTests
from spi.testing.conformance.watch import ChangeDurabilityTests, ChangeProcessTests, WatchTests
from spi.testing.conformance.writes import WriteTests


class ConformanceTests(
    AdminTests,
    WriteTests,
    LimitTests,
    ValueTests,
    ReadTests,
    FilterTests,
    AggregateTests,
    IndexTests,
    PagingTests,
    LoadTests,
    CopyTests,
    TransactionTests,
    IsolationTests,
    ThreadTests,
    ProcessTests,
    DurabilityTests,
    VerifyTests,
    ChangeTests,
    WatchTests,
    ChangeViewTests,
    ChangeProcessTests,
    ChangeDurabilityTests,
    ExpiryTests,
    ExpiryChangeTests,
    ExpiryStagingTests,
    OverwriteChangeTests,
    OverwriteExpiryTests,
    FreezeTests,
    FreezeDurabilityTests,
    FreezeExpiryTests,
    ConformanceBase,
):
    """Every group; subclass it and define the ``provider_factory`` fixture."""


__all__ = [
    "AdminTests",
    "AggregateTests",
    "ChangeDurabilityTests",
    "ChangeProcessTests",
    "ChangeTests",
    "ChangeViewTests",
    "ConformanceBase",
    "ConformanceTests",
    "CopyTests",
    "DurabilityTests",
    "ExpiryChangeTests",
    "ExpiryStagingTests",
    "ExpiryTests",
    "FilterTests",
    "FreezeDurabilityTests",
    "FreezeExpiryTests",
    "FreezeTests",
    "IndexTests",
    "IsolationTests",
    "LimitTests",
    "LoadTests",
    "OverwriteChangeTests",
    "OverwriteExpiryTests",
    "PagingTests",
    "ProcessTests",
    "ReadTests",
    "ThreadTests",
    "TransactionTests",
    "ValueTests",
    "VerifyTests",
    "WatchTests",
    "WriteTests",
]
