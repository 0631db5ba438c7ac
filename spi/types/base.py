"""The field type names of the contract and the base of their type objects.

:class:`FieldType` names a column's type in specs, URLs and files; its type object
(:attr:`FieldType.impl`, a :class:`ColumnType`) holds every rule about the type's
values: validation, the order-preserving key encoding, text and JSON forms, the Arrow
and PostgreSQL types, its checksum encoding and how the dashboard asks for one.
The modules beside this one hold one type object each (``int`` and ``long`` share
a class, as do ``float`` and ``double``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from spi.errors import InvalidFieldError, LimitExceededError

if TYPE_CHECKING:
    import pyarrow as pa

MAX_KEY_BYTES = 1024
"""Largest string or bytes value allowed in a key or indexed column."""
MAX_VALUE_BYTES = 16 * 1024 * 1024
"""Largest string or bytes value allowed anywhere."""

_REGISTRY: dict[FieldType, ColumnType] = {}


class FieldType(StrEnum):
    """The column types of the contract."""

    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    STRING = "string"
    BYTES = "bytes"
    BOOL = "bool"
    TIMESTAMP = "timestamp"

    @property
    def impl(self) -> ColumnType:
        """The type object that holds this type's rules."""
        return _REGISTRY[self]

    @property
    def is_integer(self) -> bool:
        """True for ``int`` and ``long``."""
        return self.impl.integer

    @property
    def is_numeric(self) -> bool:
        """True for the four number types."""
        return self.impl.numeric


def impl_of(ftype: str) -> ColumnType:
    """The type object of a field type (given as a :class:`FieldType` or its name)."""
    try:
        return _REGISTRY[ftype]  # type: ignore[index]  # a FieldType hashes as its name
    except KeyError:
        raise InvalidFieldError(f"unknown field type {ftype!r}") from None


def describe(value: Any) -> str:
    """``repr(value)`` for an error message, cut to 60 characters (an integer too long
    to write out in decimal is shown by its number of digits)."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * math.log10(2))} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def size_limit(in_key: bool, indexed: bool) -> int:
    """The largest string or bytes value (UTF-8 bytes) a column may hold."""
    return MAX_KEY_BYTES if in_key or indexed else MAX_VALUE_BYTES


class ColumnType:
    """The rules of one field type (as SQLAlchemy's ``TypeEngine``): a subclass per
    type, one instance per :class:`FieldType`, registered when it is made.

    Class attributes a subclass sets: :attr:`arrow` (the pyarrow factory and its
    arguments), :attr:`postgres` (PostgreSQL's name of the column type),
    :attr:`checksum_tag`, :attr:`json_kinds`, :attr:`placeholder`, :attr:`literal_hint`.
    """

    integer: ClassVar[bool] = False
    numeric: ClassVar[bool] = False
    incrementable: ClassVar[bool] = False
    """Whether ``increment`` may add to a column of the type."""
    widens_to: FieldType | None = None
    """The type a column of this type may change to in place, every stored value
    valid as it is (``int`` to ``long``, ``float`` to ``double``), or None."""
    arrow: ClassVar[tuple[str, tuple[Any, ...]]]
    """The pyarrow type factory and its arguments (exact: no widening, no narrowing)."""
    postgres: ClassVar[str]
    """PostgreSQL's name of the column type (``int8``...)."""
    checksum_tag: ClassVar[int]
    """The tag byte of the type's values in row checksums (a null is 0)."""
    json_kinds: ClassVar[frozenset[type]] = frozenset()
    """The Python types of JSON values a column takes as they are (the rest go
    through :meth:`from_json`)."""
    placeholder: ClassVar[str] = ""
    """How the dashboard's row form shows an empty field of this type."""
    literal_hint: ClassVar[str] = ""
    """How to write a value of this type in a ``--where`` expression (said after a
    mistyped literal)."""

    def __init__(self, field_type: FieldType) -> None:
        self.field_type = field_type
        _REGISTRY[field_type] = self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.field_type.value!r})"

    # --- validation -------------------------------------------------------------

    def validate(self, value: Any, column: str, *, in_key: bool = False, indexed: bool = False) -> Any:
        """``value`` checked against the type, in its canonical form (see
        :func:`spi.types.validate_value`); None where a null is allowed."""
        if value is None:
            if in_key:
                raise InvalidFieldError(f"key column {column!r} cannot be null", column=column)
            return None
        return self.canonical(value, column, size_limit(in_key, indexed), in_key)

    def canonical(self, value: Any, column: str, limit: int, in_key: bool) -> Any:
        """A non-null ``value`` checked and in canonical form (``limit``: its largest
        size in bytes, for strings and bytes)."""
        raise NotImplementedError

    def fast_check(self, limit: int) -> str | None:
        """The source of a check of ``v`` that is true only for values already valid
        and canonical (the common case, tested inline by generated validators), or
        None when there is none."""
        return None

    def checker(self, column: str, *, in_key: bool = False, indexed: bool = False) -> Callable[[Any], Any]:
        """:meth:`validate` for one column as a one-argument function, the common
        canonical values accepted by :meth:`fast_check` first."""

        def general(value: Any) -> Any:
            if value is None and not in_key:
                return None  # nulls are common in bulk data
            return self.validate(value, column, in_key=in_key, indexed=indexed)

        fast = self.fast_check(size_limit(in_key, indexed))
        if fast is None:
            return general
        namespace: dict[str, Any] = {"general": general}
        exec(f"def check(v):\n    return v if {fast} else general(v)", namespace)
        check: Callable[[Any], Any] = namespace["check"]
        return check

    def bulk_type(self, limit: int) -> Any:
        """A msgspec type that accepts no value :meth:`validate` refuses and leaves each
        it accepts as it is, or ``Any`` (checked afterwards by the column's checker)."""
        return Any

    def type_error(self, value: Any, column: str) -> InvalidFieldError:
        """The error for a value of the wrong Python type."""
        return InvalidFieldError(
            f"column {column!r} is {self.field_type}; got {type(value).__name__} {describe(value)}", column=column
        )

    def check_size(self, size: int, column: str, limit: int) -> None:
        """Refuse a string or bytes value of ``size`` bytes over ``limit``."""
        if size <= limit:
            return
        if limit == MAX_KEY_BYTES:
            raise LimitExceededError(
                f"value for key or indexed column {column!r} is {size} bytes; the limit is {MAX_KEY_BYTES}",
                column=column,
            )
        raise LimitExceededError(f"value for column {column!r} is {size} bytes; the limit is {limit}", column=column)

    # --- the order-preserving key encoding (spi.codec) ------------------------------

    def encode(self, value: Any) -> bytes:
        """The order-preserving, self-delimiting encoding of a valid non-null value."""
        raise NotImplementedError

    def encode_column(self, values: Iterable[Any]) -> list[bytes]:
        """:meth:`encode` of each of a column's valid non-null values (C-level passes
        where the type allows)."""
        return list(map(self.encode, values))

    def decode(self, data: bytes, pos: int) -> tuple[Any, int]:
        """The value encoded at ``pos`` and the position after it."""
        raise NotImplementedError

    # --- text and JSON forms (spi.textvalues) ----------------------------------------

    def from_word(self, text: str, column: str) -> Any:
        """The value a command-line word (``col=value``, not ``null``) writes, before
        validation."""
        return text

    def from_field(self, text: str, column: str) -> Any:
        """The value a non-empty CSV/TSV field writes, before validation."""
        return self.from_word(text, column)

    def from_json(self, value: Any, column: str) -> Any:
        """The value a JSON value writes, before validation."""
        return value

    # --- inference from files (kvctl table create --from) -------------------------------

    def infers_text(self, text: str) -> bool:
        """Whether a CSV/TSV text written as it is shows a value of this type (``42``
        a long, ``true`` a bool), for inferring a column's type from a file."""
        return False

    def infers_json(self, value: Any) -> bool:
        """Whether a JSON value shows a value of this type (see :meth:`infers_text`)."""
        return False

    # --- other engines' types ----------------------------------------------------------

    def arrow_type(self) -> pa.DataType:
        """The Arrow type of the column's values."""
        import pyarrow as pa  # lazy: spi is importable without pyarrow

        factory, args = self.arrow
        result: pa.DataType = getattr(pa, factory)(*args)
        return result

    def checksum_source(self) -> str:
        """The source of the checksum encoding of a non-null value ``{v}`` (the names it
        uses are those of :mod:`spi.checksum`)."""
        raise NotImplementedError
