"""Every field type's object (:class:`spi.types.ColumnType`) keeps its rules
consistent with each other: its fast checks accept only what its full validation
accepts, unchanged; its text, word and JSON forms read back what was written; its
Arrow and checksum forms take every valid value. A new type gets all of this by
adding its values to ``test_codec.VALUES``."""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_codec import VALUES

import spi
from spi.checksum import row_hasher
from spi.textvalues import from_json_value, parse_field, parse_word, to_json_value, to_word
from spi.types import MAX_KEY_BYTES, ColumnType, FieldType, values_equal

ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=20),
    st.binary(max_size=10),
    *VALUES.values(),
)


def test_every_field_type_has_its_own_type_object_and_values_to_test() -> None:
    impls = [t.impl for t in FieldType]
    assert all(isinstance(i, ColumnType) and i.field_type is t for t, i in zip(FieldType, impls))
    assert len(set(map(id, impls))) == len(impls)
    assert set(VALUES) == set(FieldType), "add the new type's values to test_codec.VALUES"


def _outcome(fn: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(value)
    except spi.KvError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("ftype", list(FieldType))
@pytest.mark.parametrize("place", ["value", "key", "indexed"])
@settings(max_examples=200, deadline=None)
@given(value=ANYTHING)
def test_the_fast_checks_agree_with_the_full_validation(ftype: FieldType, place: str, value: Any) -> None:
    impl = ftype.impl
    in_key, indexed = place == "key", place == "indexed"
    full = _outcome(lambda v: impl.validate(v, "c", in_key=in_key, indexed=indexed), value)
    fast = _outcome(impl.checker("c", in_key=in_key, indexed=indexed), value)
    assert fast[0] == full[0] and (fast[0] == "error" or values_equal(fast[1], full[1])), (fast, full)
    if full[0] == "ok" and full[1] is not None:
        assert type(fast[1]) is type(full[1])
    limit = MAX_KEY_BYTES if in_key or indexed else 16 * 1024 * 1024
    check = impl.fast_check(limit)
    if check is not None and eval(check, {}, {"v": value}):  # the type's own generated source
        assert full == ("ok", value) and type(full[1]) is type(value)
    bulk = impl.bulk_type(limit)
    if bulk is not Any:
        try:
            converted = msgspec.convert(value, bulk)
        except msgspec.ValidationError:
            return
        assert converted is value or converted == value
        assert full[0] == "ok" or ftype is FieldType.STRING  # strings are checked again after (NUL, bytes)


def _spec(ftype: FieldType) -> spi.TableSpec:
    return spi.TableSpec(
        name="t", fields=[spi.Field("k", "long"), spi.Field("c", ftype.value)], primary_key=["k"], indexes=[]
    )


@pytest.mark.parametrize("ftype", list(FieldType))
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_text_word_and_json_forms_read_back(ftype: FieldType, data: st.DataObject) -> None:
    spec = _spec(ftype)
    value = ftype.impl.validate(data.draw(VALUES[ftype]), "c")
    # The word null is a null wherever one is allowed, in a string column too (CLI.md).
    want = None if value == "null" else value
    assert values_equal(parse_word(spec, "c", to_word(value)), want)
    assert values_equal(from_json_value(spec, "c", to_json_value(value)), value)
    word = to_word(value)
    if ftype is not FieldType.BYTES and word not in ("", "null"):  # a CSV field of bytes has no b64: prefix
        assert values_equal(parse_field(spec, "c", word), value)


@pytest.mark.parametrize("ftype", list(FieldType))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_arrow_and_checksum_forms_take_every_valid_value(ftype: FieldType, data: st.DataObject) -> None:
    value = ftype.impl.validate(data.draw(VALUES[ftype]), "c")
    array = pa.array([value, None], type=ftype.impl.arrow_type())
    assert values_equal(array[0].as_py(), value)
    hasher = row_hasher(_spec(ftype), ("c",), versions=False)
    assert len(hasher({"k": 1, "c": value})) == 16
