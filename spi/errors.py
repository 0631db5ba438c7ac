"""The error hierarchy every provider raises (``spi.errors``).

Every error is a :class:`KvError`; front ends map the classes to exit codes. No
provider lets a driver exception escape unwrapped.
"""

from __future__ import annotations

from typing import Any


class KvError(Exception):
    """Base class of every error the SPI raises.

    ``column`` names the offending column when there is one. A failed bulk
    ``load`` sets ``rows_written`` (rows committed by the batches before the failing
    one) and, when a row was at fault (a bad value or key, a row too large), its
    ``row_index`` (0-based position in the input); a failure of the store itself
    (unavailable, out of space, a conflict, a frozen table) leaves it None.
    """

    def __init__(self, message: str, *, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column
        self.row_index: int | None = None
        self.rows_written: int | None = None


class SchemaError(KvError):
    """A table spec is malformed (bad name, unknown type, undeclared key column...)."""


class IncompatibleSchemaError(KvError):
    """``create_or_update`` was asked for a change it cannot apply safely."""


class TableNotFoundError(KvError):
    """The named table does not exist."""


class TableExistsError(KvError):
    """``create`` was called for a table that already exists."""


class InvalidFieldError(KvError):
    """A value, column name, key or range does not fit the table's spec."""


class RowNotFoundError(KvError):
    """A conditional or partial write named a row that does not exist."""


class RowExistsError(KvError):
    """``insert`` (or an insert-mode load) found the key already present."""

    def __init__(self, message: str, *, key: tuple[Any, ...] | None = None) -> None:
        super().__init__(message)
        self.key = key


class VersionMismatchError(KvError):
    """A conditional write expected another version than the stored one."""

    def __init__(self, message: str, *, current_version: int) -> None:
        super().__init__(message)
        self.current_version = current_version


class ConflictError(KvError):
    """A transaction lost a serialization conflict; retrying it may succeed."""


class LimitExceededError(KvError):
    """A value is larger than the limits every provider enforces."""


class TransactionTooLargeError(LimitExceededError):
    """One transaction is larger than the store takes in one commit (etcd: the members'
    ``--max-txn-ops`` or ``--max-request-bytes``); nothing of it was written. The bulk
    paths (loads, copies, imports, ``apply``, sweeps) catch it and cut their work into
    smaller pieces, each atomic; a single row or revision that cannot fit is raised."""


class WhereSyntaxError(KvError):
    """A ``--where`` expression could not be parsed; ``position`` is 1-based."""

    def __init__(self, message: str, *, position: int) -> None:
        super().__init__(message)
        self.position = position


class UrlError(KvError):
    """A provider URL is malformed or names an unknown scheme."""


class ProviderUnavailableError(KvError):
    """The store cannot be reached: server down, path locked past the busy timeout,
    bad credentials."""


class RevisionCompactedError(KvError):
    """A change feed was asked for events after a revision that compaction (or the
    retention period) has already forgotten; ``oldest`` is the oldest ``since``
    still accepted."""

    def __init__(self, message: str, *, oldest: int) -> None:
        super().__init__(message)
        self.oldest = oldest


class FrozenTableError(KvError):
    """A row write was refused because its table is frozen (``admin.freeze``, the
    fencing step of a cut-over); ``table`` names it. ``admin.unfreeze`` allows writes
    again."""

    def __init__(self, table: str) -> None:
        super().__init__(f"table {table} is frozen (kvctl table unfreeze {table} allows writes again)")
        self.table = table

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.table,))
