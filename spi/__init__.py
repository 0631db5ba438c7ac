"""The StructuredTable SPI: one contract for structured tables, many providers.

>>> import spi
>>> p = spi.connect("memory://")
"""

from __future__ import annotations

from spi import errors
from spi.capabilities import Capability
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
from spi.protocols import Admin, Provider, Table, Transaction
from spi.provider import AutoCommitTable, ProviderBase, TransactionBase
from spi.registry import connect, installed_providers, mask_password
from spi.row import Page, Row
from spi.spec import Field, TableSpec
from spi.table import TableBase
from spi.types import FieldType
from spi.where import parse_where

__all__ = [
    "Admin",
    "AutoCommitTable",
    "Capability",
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
    "ProviderBase",
    "ProviderUnavailableError",
    "Range",
    "Row",
    "RowExistsError",
    "RowNotFoundError",
    "SchemaError",
    "Table",
    "TableBase",
    "TableExistsError",
    "TableNotFoundError",
    "TableSpec",
    "Transaction",
    "TransactionBase",
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
