"""Keys, key prefixes and :class:`Range`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from spi.errors import InvalidFieldError
from spi.spec import TableSpec

T = TypeVar("T")

KeyLike = Mapping[str, Any] | Sequence[Any]
"""A key or key prefix: a mapping column → value, or a tuple in key order."""


def normalize_prefix(spec: TableSpec, prefix: KeyLike, *, what: str = "key prefix") -> tuple[Any, ...]:
    """Validate a key prefix (leftmost key columns, no gaps) into a tuple."""
    key = spec.primary_key
    if isinstance(prefix, Mapping):
        for column in prefix:
            if not spec.has_column(column):
                spec.type_of(column)  # raises the unknown-column error
            if column not in key:
                raise InvalidFieldError(
                    f"{column!r} is not a key column of {spec.name!r} (key: {', '.join(key)})", column=column
                )
        n = len(prefix)
        missing = [k for k in key[:n] if k not in prefix]
        if missing:
            raise InvalidFieldError(
                f"{what} for {spec.name!r} has a gap: give {', '.join(key[:n])} (missing {', '.join(missing)})",
                column=missing[0],
            )
        values: Sequence[Any] = [prefix[k] for k in key[:n]]
    elif isinstance(prefix, (str, bytes)) or not isinstance(prefix, Sequence):
        raise InvalidFieldError(f"{what} must be a mapping or a tuple in key order, got {type(prefix).__name__}")
    else:
        values = prefix
        if len(values) > len(key):
            raise InvalidFieldError(f"{what} has {len(values)} values; {spec.name!r} has {len(key)} key columns")
    return tuple([check(v) for check, v in zip(spec.key_validators, values)])


def normalize_key(spec: TableSpec, key: KeyLike) -> tuple[Any, ...]:
    """Validate a complete primary key into a tuple in key order."""
    checks = spec.key_validators
    if type(key) is tuple and len(key) == len(checks):
        if len(checks) == 1:
            return (checks[0](key[0]),)
        return tuple([check(v) for check, v in zip(checks, key)])
    values = normalize_prefix(spec, key, what="key")
    if len(values) != len(spec.primary_key):
        missing = spec.primary_key[len(values) :]
        raise InvalidFieldError(f"incomplete key for {spec.name!r}: missing {', '.join(missing)}", column=missing[0])
    return values


def key_of(spec: TableSpec, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key tuple of an already validated row."""
    key = spec.primary_key
    if len(key) == 1:
        return (row[key[0]],)
    return tuple([row[k] for k in key])


@dataclass(frozen=True)
class Range:
    """A key range: ``start``/``end`` are key prefixes (mapping or tuple).

    A bound of n values compares a row's first n key values with it.
    """

    start: KeyLike | None = None
    end: KeyLike | None = None
    start_inclusive: bool = True
    end_inclusive: bool = False
    full_key: bool = False

    def __init__(
        self,
        start: KeyLike | None = None,
        end: KeyLike | None = None,
        *,
        start_inclusive: bool = True,
        end_inclusive: bool = False,
    ) -> None:
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "start_inclusive", start_inclusive)
        object.__setattr__(self, "end_inclusive", end_inclusive)
        object.__setattr__(self, "full_key", False)

    @classmethod
    def all(cls) -> Range:
        """The whole table."""
        return cls()

    @classmethod
    def prefix(cls, key_prefix: KeyLike) -> Range:
        """Every row whose key starts with ``key_prefix``."""
        return cls(key_prefix, key_prefix, start_inclusive=True, end_inclusive=True)

    @classmethod
    def singleton(cls, key: KeyLike) -> Range:
        """Exactly the row with the (complete) ``key``."""
        r = cls(key, key, start_inclusive=True, end_inclusive=True)
        object.__setattr__(r, "full_key", True)
        return r

    def resolve(self, spec: TableSpec) -> ResolvedRange:
        """Validate the bounds against ``spec``."""
        start: tuple[Any, ...] | None
        end: tuple[Any, ...] | None
        if self.full_key and self.start is not None:
            start = end = normalize_key(spec, self.start)
        else:
            start = None if self.start is None else normalize_prefix(spec, self.start, what="range start")
            end = None if self.end is None else normalize_prefix(spec, self.end, what="range end")
        return ResolvedRange(start or None, self.start_inclusive, end or None, self.end_inclusive)


@dataclass(frozen=True)
class ResolvedRange:
    """A range whose bounds are validated tuples (None: unbounded)."""

    start: tuple[Any, ...] | None
    start_inclusive: bool
    end: tuple[Any, ...] | None
    end_inclusive: bool

    @classmethod
    def everything(cls) -> ResolvedRange:
        """The unbounded range."""
        return cls(None, True, None, False)


def resolve_range(spec: TableSpec, rng: Range | None) -> ResolvedRange:
    """Validate an optional range (None is the whole table)."""
    return ResolvedRange.everything() if rng is None else rng.resolve(spec)


def quantile_cuts(sample: Sequence[T], n: int) -> list[T]:
    """The values that cut the sorted ``sample`` into ``n`` parts of similar size:
    ascending, distinct, never the sample's first value (so that no part is empty
    by construction). Fewer than ``n - 1`` when the sample has too few distinct values."""
    cuts: list[T] = []
    for i in range(1, n):
        cut = sample[len(sample) * i // n]
        if cut != sample[0] and (not cuts or cut != cuts[-1]):
            cuts.append(cut)
    return cuts


def ranges_between(cuts: Sequence[tuple[Any, ...]]) -> list[Range]:
    """The ranges that ascending key ``cuts`` make of the whole table: up to the first
    cut, from each cut to the next, and from the last cut on (each cut opens a range)."""
    bounds: list[tuple[Any, ...] | None] = [None, *cuts, None]
    return [Range(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
