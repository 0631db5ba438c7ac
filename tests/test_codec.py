"""The key codec's byte order equals the contract's value order (property tests)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spi.codec import (
    column_encoder,
    decode_key,
    decode_nullable,
    encode_key,
    encode_nullable,
    encode_value,
    key_column_encoder,
    prefix_successor,
)
from spi.types import FieldType, sort_key, to_float32, validate_value

UTC = dt.UTC

VALUES: dict[FieldType, st.SearchStrategy[Any]] = {
    FieldType.INT: st.integers(-(2**31), 2**31 - 1),
    FieldType.LONG: st.integers(-(2**63), 2**63 - 1) | st.sampled_from([-1, 0, 1, -(2**63), 2**63 - 1]),
    FieldType.FLOAT: st.floats(allow_nan=False, width=32) | st.sampled_from([-0.0, 0.0, -math.inf, math.inf]),
    FieldType.DOUBLE: st.floats(allow_nan=False) | st.sampled_from([-0.0, 0.0, 5e-324, -5e-324]),
    FieldType.STRING: st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    FieldType.BYTES: st.binary() | st.sampled_from([b"\x00", b"\x00\x00", b"\x00\x01", b"\x00\xff", b"\xff"]),
    FieldType.BOOL: st.booleans(),
    FieldType.TIMESTAMP: st.datetimes(timezones=st.just(UTC)),
}


def canonical(ftype: FieldType, value: Any) -> Any:
    return validate_value(ftype, value, "c", in_key=True)


@st.composite
def typed_pairs(draw: Any) -> tuple[FieldType, Any, Any]:
    ftype = draw(st.sampled_from(list(FieldType)))
    a = canonical(ftype, draw(VALUES[ftype]))
    b = canonical(ftype, draw(VALUES[ftype]))
    return ftype, a, b


def cmp(x: Any, y: Any) -> int:
    return (x > y) - (x < y)


@settings(max_examples=1500)
@given(typed_pairs())
def test_single_value_order_and_round_trip(pair: tuple[FieldType, Any, Any]) -> None:
    ftype, a, b = pair
    ea, eb = encode_key([ftype], [a]), encode_key([ftype], [b])
    assert cmp(ea, eb) == cmp(sort_key(a), sort_key(b))
    assert decode_key([ftype], ea) == ((a,), len(ea))


@st.composite
def composite_pairs(draw: Any) -> tuple[list[FieldType], tuple[Any, ...], tuple[Any, ...]]:
    types = draw(st.lists(st.sampled_from(list(FieldType)), min_size=1, max_size=4))
    a = tuple(canonical(t, draw(VALUES[t])) for t in types)
    # Share a random prefix so that ties on leading columns are common.
    shared = draw(st.integers(0, len(types)))
    b = a[:shared] + tuple(canonical(t, draw(VALUES[t])) for t in types[shared:])
    return types, a, b


@settings(max_examples=1000)
@given(composite_pairs())
def test_composite_order_prefixes_and_round_trip(
    case: tuple[list[FieldType], tuple[Any, ...], tuple[Any, ...]],
) -> None:
    types, a, b = case
    ea, eb = encode_key(types, a), encode_key(types, b)
    assert cmp(ea, eb) == cmp(tuple(map(sort_key, a)), tuple(map(sort_key, b)))
    assert decode_key(types, ea) == (a, len(ea))
    for n in range(len(types) + 1):
        prefix = encode_key(types[:n], a[:n])
        assert ea.startswith(prefix)
        succ = prefix_successor(prefix)
        assert succ is None or ea < succ
        if a[:n] != b[:n]:
            # A row whose first n values differ lies entirely on one side of the prefix range.
            assert (eb < prefix) or (succ is not None and eb >= succ)


@given(st.sampled_from(list(FieldType)).flatmap(lambda t: st.tuples(st.just(t), st.none() | VALUES[t])))
def test_nullable_sorts_null_first(case: tuple[FieldType, Any]) -> None:
    ftype, value = case
    value = None if value is None else canonical(ftype, value)
    enc = encode_nullable(ftype, value)
    assert decode_nullable(ftype, enc) == (value, len(enc))
    if value is not None:
        assert encode_nullable(ftype, None) < enc


def test_specific_orders() -> None:
    doubles = [-math.inf, -1e300, -1.0, -5e-324, 0.0, 5e-324, 1.0, 1e300, math.inf, math.nan]
    enc = [encode_key([FieldType.DOUBLE], [v]) for v in doubles]
    assert enc == sorted(enc)
    assert encode_key([FieldType.DOUBLE], [-0.0 + 0.0]) == encode_key([FieldType.DOUBLE], [0.0])
    assert canonical(FieldType.DOUBLE, -0.0) == 0.0 and math.copysign(1, canonical(FieldType.DOUBLE, -0.0)) == 1
    strings = ["", "\x01", "A", "a", "ab", "é", "\uffff", "\U00010000"]
    assert [encode_key([FieldType.STRING], [s]) for s in strings] == sorted(
        encode_key([FieldType.STRING], [s]) for s in strings
    )
    blobs = [b"", b"\x00", b"\x00\x00", b"\x00\x01", b"\x00\xff", b"\x01", b"\xff", b"\xff\xff"]
    assert [encode_key([FieldType.BYTES], [v]) for v in blobs] == sorted(
        encode_key([FieldType.BYTES], [v]) for v in blobs
    )
    assert to_float32(0.1) != 0.1 and encode_key([FieldType.FLOAT], [to_float32(0.1)])
    stamps = [
        dt.datetime(1, 1, 1, tzinfo=UTC),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(1970, 1, 1, tzinfo=UTC),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ]
    assert [encode_key([FieldType.TIMESTAMP], [s]) for s in stamps] == sorted(
        encode_key([FieldType.TIMESTAMP], [s]) for s in stamps
    )


@st.composite
def typed_columns(draw: Any) -> tuple[list[FieldType], list[list[Any]]]:
    types = draw(st.lists(st.sampled_from(list(FieldType)), min_size=1, max_size=3))
    n = draw(st.integers(0, 6))
    return types, [[canonical(t, draw(VALUES[t])) for _ in range(n)] for t in types]


@given(typed_columns())
def test_column_encoders_give_the_per_value_encoding(case: tuple[list[FieldType], list[list[Any]]]) -> None:
    """The bulk loads' column-at-a-time encoders (C-level passes) equal the per-value codec."""
    types, columns = case
    for ftype, values in zip(types, columns):
        assert column_encoder(ftype)(values) == [encode_value(ftype, v) for v in values]
    assert key_column_encoder(types)(columns) == [encode_key(types, key) for key in zip(*columns)]
