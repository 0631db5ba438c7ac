"""The StructuredTable SPI: one contract for structured tables, many providers.

>>> import spi
>>> p = spi.connect("memory://")
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spi import errors
    from spi.capabilities import Capability
    from spi.changes import Change, Progress
    from spi.errors import (
        ConflictError,
        FrozenTableError,
        IncompatibleSchemaError,
        InvalidFieldError,
        KvError,
        LimitExceededError,
        ProviderUnavailableError,
        RevisionCompactedError,
        RowExistsError,
        RowNotFoundError,
        SchemaError,
        TableExistsError,
        TableNotFoundError,
        TransactionTooLargeError,
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

_HOMES = {
    "errors": "spi.errors",
    "Capability": "spi.capabilities",
    "Change": "spi.changes",
    "Progress": "spi.changes",
    **dict.fromkeys(
        [
            "ConflictError",
            "FrozenTableError",
            "IncompatibleSchemaError",
            "InvalidFieldError",
            "KvError",
            "LimitExceededError",
            "ProviderUnavailableError",
            "RevisionCompactedError",
            "RowExistsError",
            "RowNotFoundError",
            "SchemaError",
            "TableExistsError",
            "TableNotFoundError",
            "TransactionTooLargeError",
            "UrlError",
            "VersionMismatchError",
            "WhereSyntaxError",
        ],
        "spi.errors",
    ),
    "Expr": "spi.filters",
    "col": "spi.filters",
    "Range": "spi.keys",
    **dict.fromkeys(["Admin", "Provider", "Table", "Transaction"], "spi.protocols"),
    **dict.fromkeys(["AutoCommitTable", "ProviderBase", "TransactionBase"], "spi.provider"),
    **dict.fromkeys(["connect", "installed_providers", "mask_password"], "spi.registry"),
    "Page": "spi.row",
    "Row": "spi.row",
    "Field": "spi.spec",
    "TableSpec": "spi.spec",
    "TableBase": "spi.table",
    "FieldType": "spi.types",
    "parse_where": "spi.where",
}
"""The module each public name lives in: ``import spi`` imports none of them, so a
program pays only for what it uses (``kvctl get`` never loads the filter parser)."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'spi' has no attribute {name!r}")
    module = importlib.import_module(home)
    value = module if home == f"spi.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Admin",
    "AutoCommitTable",
    "Capability",
    "Change",
    "ConflictError",
    "Expr",
    "Field",
    "FieldType",
    "FrozenTableError",
    "IncompatibleSchemaError",
    "InvalidFieldError",
    "KvError",
    "LimitExceededError",
    "Page",
    "Progress",
    "Provider",
    "ProviderBase",
    "ProviderUnavailableError",
    "Range",
    "RevisionCompactedError",
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
    "TransactionTooLargeError",
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

logging.getLogger(__name__).addHandler(logging.NullHandler())  # records go nowhere unless configured
