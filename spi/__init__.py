"""The StructuredTable SPI: one contract for structured tables, many providers.

>>> import spi
>>> p = spi.connect("memory://")
"""

from __future__ import annotations

from spi import errors
from spi.errors import (
    ConflictError,
    IncompatibleSchemaError,
    InvalidFieldError,
    KvError,
    LimitExceededError,
    ProviderUnavailableError,
    RowExistsError,
    RowNotFoundError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
    UrlError,
    VersionMismatchError,
    WhereSyntaxError,
)
from spi.filters import Expr, col
from spi.keys import Range
from spi.provider import Admin, AutoCommitTable, ProviderBase, TransactionBase
from spi.registry import connect, installed_providers, mask_password
from spi.row import Page, Row
from spi.spec import Field, TableSpec
from spi.table import TableBase
from spi.types import FieldType
from spi.where import parse_where

Provider = ProviderBase
"""The provider interface (see :class:`spi.provider.ProviderBase`)."""
Transaction = TransactionBase
"""The transaction interface (see :class:`spi.provider.TransactionBase`)."""
Table = TableBase
"""The table interface inside a transaction (see :class:`spi.table.TableBase`)."""

__all__ = [
    "Admin",
    "AutoCommitTable",
    "ConflictError",
    "Expr",
    "Field",
    "FieldType",
    "IncompatibleSchemaError",
    "InvalidFieldError",
    "KvError",
    "LimitExceededError",
    "Page",
    "Provider",
    "ProviderUnavailableError",
    "Range",
    "Row",
    "RowExistsError",
    "RowNotFoundError",
    "SchemaError",
    "Table",
    "TableExistsError",
    "TableNotFoundError",
    "TableSpec",
    "Transaction",
    "UrlError",
    "VersionMismatchError",
    "WhereSyntaxError",
    "col",
    "connect",
    "errors",
    "installed_providers",
    "mask_password",
    "parse_where",
]
