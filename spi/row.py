"""Rows and scan pages as the SPI returns them."""

from __future__ import annotations

from abc import ABCMeta
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from spi.codec import from_micros, to_micros


class RowMeta(msgspec.StructMeta, ABCMeta):
    """The metaclass of row structs: a struct type that is also a
    :class:`~collections.abc.Mapping` (and for :class:`Row`, an ABC other row types
    register with)."""


class RowMethods(Mapping[str, Any]):
    """What every row type does, given its ``mapping``, ``version`` and ``expires``
    (a mixin of no state of its own)."""

    __slots__ = ()
    if TYPE_CHECKING:  # what each row type provides (fields or properties)

        @property
        def mapping(self) -> Mapping[str, Any]: ...
        @property
        def version(self) -> int: ...
        @property
        def expires(self) -> int | None: ...

    @property
    def expires_at(self) -> datetime | None:
        """When the row expires (an aware UTC datetime), or None when it never does."""
        expires = self.expires
        return None if expires is None else from_micros(expires)

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        """What rich shows: the values, the version and the expiry (not the struct's fields)."""
        shown = [("values", dict(self.mapping)), ("version", self.version)]
        return shown if self.expires is None else [*shown, ("expires_at", self.expires_at)]

    __eq__ = Mapping.__eq__  # the values alone, as any mapping compares

    def __repr__(self) -> str:
        expires = self.expires_at
        extra = "" if expires is None else f", expires_at={expires!r}"
        return f"Row({dict(self.mapping)!r}, version={self.version}{extra})"

    def keys(self) -> KeysView[str]:
        """The column names."""
        return self.mapping.keys()

    def items(self) -> ItemsView[str, Any]:
        """``(column, value)`` pairs."""
        return self.mapping.items()

    def values(self) -> ValuesView[Any]:
        """The values, in column order."""
        return self.mapping.values()

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy of the values."""
        return dict(self.mapping)


class Row(RowMethods, msgspec.Struct, metaclass=RowMeta, gc=False, eq=False):
    """A read-only mapping column → value, with the row's ``version`` and
    :attr:`expires_at`.

    ``Row(values, version, expires)`` (``expires`` optional and positional: an aware
    datetime, or microseconds since the epoch) keeps ``values`` as given, not copied,
    as :attr:`mapping`: do not change them afterwards. A row is a msgspec struct
    outside the garbage collector (its values are plain data, so it is never part of
    a cycle): scans make one per row, and tracking each one cost about a tenth of a
    microsecond.

    The rows a store returns may be of another type registered as a ``Row`` (the
    embedded engine decodes stored rows straight into one struct type per table,
    :mod:`spi.kv.rowtypes`): test rows with ``isinstance(row, Row)``, not by type."""

    mapping: Mapping[str, Any]
    """The values themselves, not a copy (the fastest way to hand a row's values to a
    function that takes a dict): read it, never change it; :meth:`to_dict` gives a
    dict of your own."""
    version: int
    # Kept as given; the stores hand microseconds, and the datetime is made only when asked for.
    _expires: datetime | int | None = None

    @property
    def expires(self) -> int | None:
        """:attr:`expires_at` in microseconds since the epoch (None: never)."""
        expires = self._expires
        if isinstance(expires, datetime):
            if expires.tzinfo is None:
                raise ValueError(f"a row's expiry must be an aware datetime, not {expires.isoformat()}")
            return to_micros(expires)
        return expires

    def __getitem__(self, column: str) -> Any:
        return self.mapping[column]

    def __iter__(self) -> Iterator[str]:
        return iter(self.mapping)

    def __len__(self) -> int:
        return len(self.mapping)


@dataclass(frozen=True)
class Page:
    """One page of a paginated scan; ``next_token`` is None when the scan is done."""

    rows: list[Row] = field(default_factory=list)
    next_token: str | None = None
