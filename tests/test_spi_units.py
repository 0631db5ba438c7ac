"""Unit tests of the spi pieces that are not provider behaviour."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spi
from spi import col
from spi.errors import InvalidFieldError, SchemaError, UrlError, WhereSyntaxError
from spi.filters import And, Compare, Expr, In, IsNull, Like, Not, Or, evaluate, matches
from spi.keys import ResolvedRange
from spi.planner import plan_scan
from spi.predicate import compile_filter
from spi.registry import installed_providers, mask_password, split_scheme
from spi.spec import plan_schema_change
from spi.testing.fixtures import ORDERS
from spi.textvalues import key_words, parse_field, parse_word, to_word
from spi.types import FieldType
from spi.where import KEYWORDS

SPEC = spi.TableSpec(
    "t",
    [
        ("k", "long"),
        ("s", "string"),
        ("d", "double"),
        ("ts", "timestamp"),
        ("b", "bytes"),
        ("flag", "bool"),
        ("n", "int"),
    ],
    ["k"],
    ["s", "n"],
)


_CLAUSES = [
    "s = 'open'",
    "d >= 100.5",
    "k in (1, 2)",
    "ts is not null",
    "n between 1 and 5",
    "not s like 'a%'",
    "(d < 3 or k = 2)",
    "flag = true",
]


class TestParseWhere:
    def test_full_grammar(self) -> None:
        e = spi.parse_where(
            "s = 'o''k' AND (d >= 100.5 Or k IN (1, 2)) and ts is NOT null and NOT s like 'ab%' "
            "and n between -1 and 3 and s not in ('x') and flag = true and b = 'b64:AAE='",
            SPEC,
        )
        assert isinstance(e, And)
        parts = e.parts
        assert parts[0] == Compare("s", "==", "o'k")
        assert parts[1] == Or((Compare("d", ">=", 100.5), In("k", (1, 2))))
        assert parts[2] == IsNull("ts", negated=True)
        assert parts[3] == Not(Like("s", "ab%"))
        assert parts[4] == And((Compare("n", ">=", -1), Compare("n", "<=", 3)))
        assert parts[5] == Not(In("s", ("x",)))
        assert parts[6] == Compare("flag", "==", True)
        assert parts[7] == Compare("b", "==", b"\x00\x01")

    def test_matches_builder(self) -> None:
        assert spi.parse_where("s <> 'a' or k != 2", SPEC) == Or((col("s") != "a", col("k") != 2))
        assert spi.parse_where("d = 3", SPEC) == Compare("d", "==", 3.0)
        assert spi.parse_where("s = null", SPEC) == Compare("s", "==", None)

    def test_timestamps_default_to_utc(self) -> None:
        e = spi.parse_where("ts > '2024-05-01T12:00:00'", SPEC)
        assert isinstance(e, Compare) and e.value == dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
        e2 = spi.parse_where("ts > '2024-05-01T12:00:00+02:00'", SPEC)
        assert isinstance(e2, Compare) and e2.value == dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC)

    @pytest.mark.parametrize(
        ("text", "position"),
        [
            ("s = ", 5),
            ("s == 'a'", 4),
            ("s = 'a' and", 12),
            ("(s = 'a'", 9),
            ("s = 'a' @", 9),
            ("s = 'open", 5),
            ("k in ()", 7),
            ("", 1),
        ],
    )
    def test_syntax_errors_name_position(self, text: str, position: int) -> None:
        with pytest.raises(WhereSyntaxError) as e:
            spi.parse_where(text, SPEC)
        assert e.value.position == position
        assert str(position) in str(e.value)

    @pytest.mark.parametrize(
        ("text", "position", "token"),
        [
            ("s = 'open' and and", 16, "and"),
            ("d >= 100.5 or or k = 1", 15, "or"),
            ("s = 'a' AND Or k = 1", 13, "Or"),
            ("not and s = 'a'", 5, "and"),
            ("s in ('a', null, and)", 18, "and"),
            ("n between 1 and and", 17, "and"),
            ("k = 1 or between = 2", 10, "between"),
            ("(s = 'a') and (like = 'x')", 16, "like"),
            ("true = 1", 1, "true"),
            ("s is not null and is null", 19, "is"),
        ],
    )
    def test_keywords_are_never_column_names(self, text: str, position: int, token: str) -> None:
        with pytest.raises(WhereSyntaxError) as e:
            spi.parse_where(text, SPEC)
        assert e.value.position == position and text[position - 1 :].startswith(token)
        assert f"unexpected {token!r} at position {position}" in str(e.value)

    def test_a_keyword_named_column_says_why_it_cannot_be_used(self) -> None:
        spec = spi.TableSpec("t", [("k", "long"), ("in", "string")], ["k"])
        with pytest.raises(WhereSyntaxError, match="'in' is a keyword") as e:
            spi.parse_where("k = 1 and in = 'x'", spec)
        assert e.value.position == 11

    def test_names_starting_with_a_keyword_are_columns(self) -> None:
        spec = spi.TableSpec("t", [("k", "long"), ("order", "long"), ("is_open", "bool"), ("notes", "string")], ["k"])
        assert spi.parse_where("order = 1 and is_open = true or notes like 'a%'", spec) == Or(
            (And((Compare("order", "==", 1), Compare("is_open", "==", True))), Like("notes", "a%"))
        )

    @settings(max_examples=300, deadline=None)
    @given(
        clauses=st.lists(st.sampled_from(_CLAUSES), min_size=2, max_size=5),
        joiners=st.lists(st.sampled_from(["and", "or", "AND", "Or"]), min_size=4, max_size=4),
        stray=st.sampled_from([k for k in KEYWORDS if k != "not"] + ["AND", "Null", "TRUE"]),
        at=st.integers(min_value=0),
        spaces=st.sampled_from([" ", "  ", "\t"]),
    )
    def test_a_stray_keyword_is_reported_where_it_stands(
        self, clauses: list[str], joiners: list[str], stray: str, at: int, spaces: str
    ) -> None:
        """A keyword right after a joiner (where a column or '(' must come) is the
        error, at its own 1-based position."""
        gap = at % (len(clauses) - 1)
        text = ""
        for i, clause in enumerate(clauses):
            if i:
                text += f"{spaces}{joiners[i - 1]}{spaces}"
                if i - 1 == gap:
                    position = len(text) + 1
                    text += f"{stray}{spaces}"
            text += clause
        with pytest.raises(WhereSyntaxError) as e:
            spi.parse_where(text, SPEC)
        assert e.value.position == position, text

    @pytest.mark.parametrize(
        "text",
        [
            "nope = 1",
            "s = 5",
            "k = 'x'",
            "k = 1.5",
            "flag = 1",
            "ts > 'yesterday'",
            "n = 99999999999",
            "d like 'x'",
            "b = 'plain'",
        ],
    )
    def test_type_errors(self, text: str) -> None:
        with pytest.raises(InvalidFieldError):
            spi.parse_where(text, SPEC)


class TestFilters:
    def test_three_valued_logic(self) -> None:
        row = {"a": None, "b": 1}
        assert evaluate(col("a") == 1, row) is None
        assert evaluate(col("a") != 1, row) is None
        assert evaluate(~(col("a") == 1), row) is None
        assert evaluate((col("a") == 1) | (col("b") == 1), row) is True
        assert evaluate((col("a") == 1) & (col("b") == 2), row) is False
        assert evaluate(col("b").isin([2, None]), row) is None
        assert evaluate(col("b").isin([1, None]), row) is True

    def test_filters_have_no_truth_value(self) -> None:
        with pytest.raises(TypeError):
            bool(col("a") == 1)

    def test_startswith_escapes(self) -> None:
        assert col("s").startswith("a%_\\") == Like("s", "a\\%\\_\\\\%")


class TestSpec:
    def test_equality_ignores_field_order(self) -> None:
        a = spi.TableSpec("t", [("a", "long"), ("b", "string")], ["a"], ["b"])
        b = spi.TableSpec("t", [("b", "string"), ("a", "long")], ["a"], ["b", "b"])
        assert a == b and hash(a) == hash(b)
        assert a != spi.TableSpec("t", [("a", "long"), ("b", "string")], ["a"])

    def test_from_dict_errors(self) -> None:
        with pytest.raises(SchemaError, match="does not match"):
            spi.TableSpec.from_dict(ORDERS.to_dict(), name="other")
        with pytest.raises(SchemaError, match="unknown keys"):
            spi.TableSpec.from_dict({**ORDERS.to_dict(), "extra": 1})
        assert (
            spi.TableSpec.from_dict({k: v for k, v in ORDERS.to_dict().items() if k != "name"}, name="orders") == ORDERS
        )

    def test_immutable(self) -> None:
        with pytest.raises(AttributeError):
            ORDERS.name = "x"  # type: ignore[misc]


class TestRegistry:
    def test_schemes(self) -> None:
        assert split_scheme("postgres://u@h/db")[0] == "postgresql+psycopg"
        assert split_scheme("postgresql://u@h/db")[1] == "postgresql+psycopg://u@h/db"
        assert {p.scheme for p in installed_providers()} >= {"memory", "rocksdb", "postgresql+psycopg"}

    @pytest.mark.parametrize(
        "url",
        [
            "",
            "nothing",
            "9x://",
            "nope://x",
            "memory://host",
            "memory://?bogus=1",
            "memory:///path",
            "memory://?busy_timeout=abc",
        ],
    )
    def test_bad_urls(self, url: str) -> None:
        with pytest.raises(UrlError):
            spi.connect(url)

    def test_password_masked(self) -> None:
        assert mask_password("postgresql+psycopg://kv:s3cret@h:5432/db?schema=x") == (
            "postgresql+psycopg://kv:***@h:5432/db?schema=x"
        )
        assert mask_password("rocksdb:///tmp/x") == "rocksdb:///tmp/x"
        with pytest.raises(UrlError) as e:
            spi.connect("nope://kv:s3cret@h/db")
        assert "s3cret" not in str(e.value)

    def test_connect_imports_only_the_chosen_provider(self) -> None:
        import subprocess
        import sys

        code = (
            "import sys, spi; spi.connect('memory://'); "
            "print(any(m.startswith(('providers.rocksdb', 'providers.postgres', 'sqlalchemy', 'rocksdict')) "
            "for m in sys.modules))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "False"


class TestPlanner:
    def plan(self, where: spi.Expr | None, **kw: object) -> str:
        bound = None if where is None else spi.filters.bind(where, ORDERS)
        return plan_scan(ORDERS, ResolvedRange.everything(), bound, **kw).describe(ORDERS)  # type: ignore[arg-type]

    def test_index_for_equality_and_in(self) -> None:
        assert "read index 'status'" in self.plan(col("status") == "open")
        assert "read index 'status'" in self.plan(col("status").isin(["a", "b"]) & (col("total") > 1))
        assert "filter after reading: total > 1" in self.plan(col("status").isin(["a", "b"]) & (col("total") > 1))

    def test_key_prefix_for_first_key_column(self) -> None:
        text = self.plan((col("region") == "eu") & (col("status") == "x"))
        assert "read primary key of 'orders' in [region=eu, region=eu]" in text  # keys as words, no Python

    def test_explain_writes_values_as_where_literals(self) -> None:
        assert "status in ('a', 'it''s')" in self.plan(col("status").isin(["a", "it's"]))
        spec = spi.TableSpec("t", [("k", "long"), ("b", "bytes")], ["k"], ["b"])
        bound = spi.filters.bind(col("b") >= b"\x00\x01", spec)
        text = plan_scan(spec, ResolvedRange.everything(), bound, ordered=False).describe(spec)
        assert "b >= 'b64:AAE='" in text
        assert str(col("b") == b"\x00\x01") == "b = 'b64:AAE='"  # reads back through parse_where
        assert spi.parse_where(str(col("b") == b"\x00\x01"), spec) == Compare("b", "==", b"\x00\x01")

    def test_range_on_index_used_when_order_free(self) -> None:
        assert "read index" not in self.plan(col("status") > "m")
        assert "read index 'status'" in self.plan(col("status") > "m", ordered=False)
        assert "read index 'status'" in self.plan(col("status") > "m", order_by="status")

    def test_contradiction_reads_nothing(self) -> None:
        assert "nothing is read" in self.plan((col("region") > "z") & (col("region") < "a"))
        assert "nothing is read" in self.plan((col("status") == "a") & (col("status") == "b"))


def test_parse_word() -> None:
    assert parse_word(SPEC, "ts", "2024-05-01") == dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    assert parse_word(SPEC, "b", "b64:AAE") == b"\x00\x01"
    assert parse_word(SPEC, "s", "null") is None
    assert parse_word(SPEC, "d", "null") is None
    with pytest.raises(InvalidFieldError):
        parse_word(SPEC, "k", "null")
    with pytest.raises(InvalidFieldError):
        parse_word(SPEC, "flag", "yes")


def test_every_public_name_of_spi_resolves_lazily() -> None:
    """``import spi`` loads no submodule; each name of ``spi.__all__`` resolves on use."""
    import subprocess
    import sys

    code = (
        "import sys, spi\n"
        "assert not [m for m in sys.modules if m.startswith('spi.')], sorted(sys.modules)\n"
        "missing = [n for n in spi.__all__ if getattr(spi, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert spi.errors.KvError is spi.KvError and 'parse_where' in dir(spi)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_null_words_in_a_string_key_are_text() -> None:
    spec = spi.TableSpec("t", [("name", "string"), ("note", "string")], ["name"])
    assert parse_word(spec, "name", "null") == "null"
    assert parse_word(spec, "note", "null") is None


def test_parse_field() -> None:
    spec = spi.TableSpec("t", [("name", "string"), ("k", "long"), ("n", "int"), ("s", "string")], ["name", "k"])
    assert parse_field(spec, "s", "") == "" and parse_field(spec, "s", "null") == "null"
    assert parse_field(spec, "n", "") is None
    assert parse_field(spec, "n", "433.0") == 433 and parse_field(spec, "k", "-12.000") == -12
    for column, text in (("name", ""), ("k", ""), ("n", "433.5"), ("n", "1e3"), ("n", "null"), ("n", "433.")):
        with pytest.raises(InvalidFieldError) as e:
            parse_field(spec, column, text)
        assert e.value.column == column


def test_keys_read_as_command_line_words() -> None:
    spec = spi.TableSpec(
        "t",
        [("s", "string"), ("k", "long"), ("ts", "timestamp"), ("b", "bytes"), ("f", "bool")],
        ["s", "k", "ts", "b", "f"],
    )
    key = ("a b", -3, dt.datetime(2024, 5, 1, tzinfo=dt.UTC), b"\x00\x01", False)
    assert key_words(spec, key) == "'s=a b' k=-3 ts=2024-05-01T00:00:00+00:00 b=b64:AAE= f=false"
    assert key_words(spec, ("it's", 1, key[2], b"", True)).startswith("'s=it'\"'\"'s' k=1 ")
    for column, value in zip(spec.primary_key, key):
        assert parse_word(spec, column, to_word(value)) == value  # the words read back


def test_schema_messages_speak_no_python() -> None:
    old = spi.TableSpec("t", [("a", "long"), ("b", "long")], ["a", "b"])
    with pytest.raises(spi.IncompatibleSchemaError, match=r"from \(a, b\) to \(b, a\)"):
        plan_schema_change(old, spi.TableSpec("t", [("a", "long"), ("b", "long")], ["b", "a"]))
    with pytest.raises(SchemaError, match=r'got \{"name": "a"\}'):
        spi.TableSpec.from_dict({"name": "t", "fields": [{"name": "a"}], "primary_key": ["a"]})


_PRED_TYPES = {"i": FieldType.LONG, "d": FieldType.DOUBLE, "s": FieldType.STRING, "b": FieldType.BOOL}
_PRED_VALUES = {
    "i": st.integers(-3, 3),
    "d": st.sampled_from([-1.5, -0.0, 0.0, 2.0, float("nan"), float("inf")]),
    "s": st.sampled_from(["", "a", "ab", "b%", "_x"]),
    "b": st.booleans(),
}


def _leaf(column: str) -> st.SearchStrategy[Expr]:
    value = st.none() | _PRED_VALUES[column]
    return st.one_of(
        st.builds(Compare, st.just(column), st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), value),
        st.builds(In, st.just(column), st.lists(value, max_size=3).map(tuple)),
        st.builds(IsNull, st.just(column), st.booleans()),
        *(
            [st.builds(Like, st.just(column), st.sampled_from(["a%", "%b", "_", "a_", "\\%%"]))]
            if column == "s"
            else []
        ),
    )


_EXPRS = st.recursive(
    st.sampled_from(list(_PRED_TYPES)).flatmap(_leaf),
    lambda inner: st.one_of(
        st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(Not, inner),
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(_EXPRS, st.lists(st.fixed_dictionaries({c: st.none() | v for c, v in _PRED_VALUES.items()}), max_size=5))
def test_compiled_filters_agree_with_evaluate(expr: Expr, rows: list[dict[str, Any]]) -> None:
    """spi.predicate's generated code keeps exactly the rows spi.filters.matches keeps."""
    keep = compile_filter(expr, _PRED_TYPES)
    for row in rows:
        assert keep(row) is matches(expr, row), (str(expr), row)


def test_rows_are_mappings_outside_the_collector() -> None:
    """``spi.Row``: a read-only mapping compared by its values, unhashable, kept out
    of the garbage collector, its values held without a copy; the expiry given as an
    aware datetime or microseconds reads back as UTC and as microseconds."""
    import copy
    import gc
    import pickle
    from collections.abc import Mapping

    values = {"k": 1, "s": "x"}
    row = spi.Row(values, 3)
    assert isinstance(row, Mapping) and row == {"k": 1, "s": "x"} and row == spi.Row({"k": 1, "s": "x"}, 9)
    assert dict(row) == {**row} == row.to_dict() == values and row.mapping is values
    assert row.version == 3 and row.expires_at is None and row.expires is None
    assert not gc.is_tracked(row)
    with pytest.raises(TypeError):
        hash(row)
    paris = dt.timezone(dt.timedelta(hours=1))
    when = dt.datetime(2030, 1, 1, 12, tzinfo=paris)
    for expiring in (spi.Row(values, 1, when), spi.Row(values, 1, 1893495600000000)):
        assert expiring.expires == 1893495600000000
        assert expiring.expires_at == when and expiring.expires_at.tzinfo is dt.UTC
        for again in (pickle.loads(pickle.dumps(expiring)), copy.deepcopy(expiring)):
            assert again == expiring and again.version == 1 and again.expires == expiring.expires
    with pytest.raises(ValueError, match="aware datetime"):
        spi.Row(values, 1, dt.datetime(2030, 1, 1)).expires  # noqa: B018 - the property raises
    assert repr(spi.Row(values, 2)) == "Row({'k': 1, 's': 'x'}, version=2)"


def test_fitting_halves_a_refused_piece_and_keeps_the_size_that_went_in() -> None:
    """spi.fitting.Fitting: the one rule every bulk path cuts its work to fit by."""
    from spi.errors import TransactionTooLargeError
    from spi.fitting import Fitting

    tried: list[int] = []

    def write(start: int, stop: int) -> int:
        tried.append(stop - start)
        if stop - start > 3:
            raise TransactionTooLargeError("too large")
        return stop - start

    fitting = Fitting()
    assert [stop for stop, _ in fitting.pieces(10, write)] == [2, 4, 6, 8, 10]
    assert tried == [10, 5, 2, 2, 2, 2, 2] and fitting.limit == 2
    assert list(Fitting(4).pieces(0, lambda start, stop: stop - start)) == [(0, 0)]  # no items: one call
    with pytest.raises(TransactionTooLargeError):
        Fitting().attempt(1, lambda n: write(0, 4))
