"""``parse_where``: the CLI/TUI filter syntax, parsed by hand into :mod:`spi.filters`.

Grammar (``or`` binds loosest, then ``and``, then ``not``)::

    or_expr   := and_expr ("or" and_expr)*
    and_expr  := not_expr ("and" not_expr)*
    not_expr  := "not" not_expr | "(" or_expr ")" | predicate
    predicate := NAME ("=" | "!=" | "<>" | "<" | "<=" | ">" | ">=") literal
               | NAME ["not"] "in" "(" literal ("," literal)* ")"
               | NAME ["not"] "between" literal "and" literal
               | NAME "is" ["not"] "null"
               | NAME ["not"] "like" STRING
    literal   := STRING | NUMBER | "true" | "false" | "null"

Keywords are case-insensitive and never column names (a keyword run on into a word
character is a name: ``andy``, ``order_in``); names are ``[A-Za-z_][A-Za-z0-9_]*``;
strings are single-quoted with ``''`` as the escape; numbers are ``[+-]`` then an
integer, a decimal (``1.``, ``.5``, ``1.5``) or either with an exponent (``1e5``,
``1.5E-3``); spaces, tabs and line breaks separate tokens. Quoted ISO 8601 timestamps
and ``'b64:...'`` bytes are strings checked against the column type.

A chain ``a and b and c`` is one :class:`And` of three parts (likewise ``or``);
parentheses nest; ``x between a and b`` is ``And(x >= a, x <= b)``. Columns and literal
types are checked against the spec, after the whole text has parsed: a syntax error
anywhere is reported before a column or type error.

Parentheses nest at most :data:`MAX_DEPTH` deep, and so do ``and``, ``or`` and ``not``
in the expression built (``between`` counting as an ``and``): deeper filters would
overflow the recursion of the code that evaluates and compiles them, so they are a
:class:`WhereSyntaxError` naming the first parenthesis past the limit, or the operator
at which the expression, counted from its innermost predicate, got too deep. A filter
written out with ``str()`` has no more parentheses than levels, so it parses back.
A where-clause holds at most :data:`MAX_PREDICATES` predicates (a
:class:`WhereSyntaxError` at the first one past it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from spi.errors import InvalidFieldError, WhereSyntaxError
from spi.filters import And, Compare, Expr, In, IsNull, Like, Not, Or
from spi.spec import TableSpec
from spi.types import FieldType, describe
from spi.types.booleans import BOOL
from spi.types.strings import BYTES, STRING
from spi.types.timestamps import TIMESTAMP

KEYWORDS = ("and", "or", "not", "in", "like", "between", "is", "null", "true", "false")
"""The where-clause keywords (any case): never read as column names."""

MAX_DEPTH = 50
"""How deep parentheses may nest, and and/or/not inside one another, in a where-clause."""

MAX_PREDICATES = 10_000
"""How many predicates (``col = value``, ``col in (...)``...) a where-clause may hold:
a filter is compiled to one Python expression, which takes seconds past this (a
list of values is one ``in``, which may be as long as it likes)."""

# One alternative a token kind; whitespace has no group. A keyword's group is the
# keyword itself, so the kind of ``AND`` is ``"and"``.
_TOKEN = re.compile(
    r"[ \t\f\r\n]+"
    r"|(?P<number>[+-]?(?:[0-9]+[eE][+-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+))"
    r"|(?P<string>'(?:[^']|'')*')"
    r"|(?P<op><>|!=|<=|>=|=|<|>)"
    r"|(?P<punct>[(),])"
    + "".join(rf"|(?P<{word}>(?i:{word})\b)" for word in KEYWORDS)
    + r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<char>.)",
    re.DOTALL,
)
_LITERALS = ("string", "number", "true", "false", "null")


class _Token(NamedTuple):
    kind: str  # a _TOKEN group name, the punctuation itself, or "end"
    text: str
    pos: int  # 0-based offset in the where-clause


def _tokens(text: str) -> list[_Token]:
    """The tokens of ``text`` up to its end or its first character no token starts with."""
    out: list[_Token] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind is None:
            continue
        out.append(_Token(m.group() if kind == "punct" else kind, m.group(), m.start()))
        if kind == "char":
            return out
    out.append(_Token("end", "", len(text)))
    return out


def parse_where(text: str, spec: TableSpec) -> Expr:
    """Parse a where-clause into a filter expression checked against ``spec``.

    Raises :class:`WhereSyntaxError` (with the 1-based ``position``) for a syntax
    error and :class:`InvalidFieldError` for an unknown column or mistyped literal.
    """
    if not isinstance(text, str) or not text.strip():
        raise WhereSyntaxError("where: empty expression at position 1", position=1)
    return _Parser(text, spec).parse()


class _Parser:
    """Recursive descent over one where-clause's tokens, one method a grammar rule."""

    def __init__(self, text: str, spec: TableSpec) -> None:
        self.spec = spec
        self.tokens = _tokens(text)
        self.at = 0
        self.parens = 0
        self.predicates = 0
        # The first column or type error, raised only once the whole text has parsed.
        self.error: InvalidFieldError | None = None

    def parse(self) -> Expr:
        expr, _ = self.or_expr()
        self.take("end")
        if self.error is not None:
            raise self.error
        return expr

    def peek(self) -> str:
        return self.tokens[self.at].kind

    def take(self, *kinds: str) -> _Token:
        token = self.tokens[self.at]
        if token.kind not in kinds:
            raise self.unexpected(token)
        self.at += 1
        return token

    def or_expr(self) -> tuple[Expr, int]:
        """The expression and its depth (levels of and/or/not, a predicate being 1)."""
        return self.chain("or", self.and_expr)

    def and_expr(self) -> tuple[Expr, int]:
        return self.chain("and", self.not_expr)

    def chain(self, joiner: str, part: Callable[[], tuple[Expr, int]]) -> tuple[Expr, int]:
        expr, depth = part()
        if self.peek() != joiner:
            return expr, depth
        at = self.tokens[self.at].pos
        parts = [expr]
        while self.peek() == joiner:
            self.at += 1
            expr, part_depth = part()
            parts.append(expr)
            depth = max(depth, part_depth)
        return (Or if joiner == "or" else And)(tuple(parts)), self.deeper(depth, at)

    def not_expr(self) -> tuple[Expr, int]:
        nots = []
        while self.peek() == "not":  # a loop, not recursion: a not costs no frame
            nots.append(self.take("not").pos)
        expr: Expr
        if self.peek() == "(":
            at = self.take("(").pos
            self.parens += 1
            if self.parens > MAX_DEPTH:
                raise WhereSyntaxError(
                    f"where: too many nested parentheses at position {at + 1} (at most {MAX_DEPTH})", position=at + 1
                )
            expr, depth = self.or_expr()
            self.take(")")
            self.parens -= 1
        else:
            expr, depth = self.predicate()
        for at in reversed(nots):
            expr, depth = Not(expr), self.deeper(depth, at)
        return expr, depth

    def deeper(self, depth: int, at: int) -> int:
        """``depth`` + 1, the depth of an and/or/not at offset ``at``, unless too deep."""
        if depth >= MAX_DEPTH:
            raise WhereSyntaxError(
                f"where: expression nested too deeply at position {at + 1} "
                f"(and/or/not nest at most {MAX_DEPTH} levels)",
                position=at + 1,
            )
        return depth + 1

    def predicate(self) -> tuple[Expr, int]:
        name = self.take("name")
        column = name.text
        self.predicates += 1
        if self.predicates > MAX_PREDICATES:
            raise WhereSyntaxError(
                f"where: more than {MAX_PREDICATES} predicates at position {name.pos + 1} "
                "(a list of values is one predicate: col in (a, b, ...))",
                position=name.pos + 1,
            )
        negated = self.peek() == "not"
        if negated:
            self.at += 1
            form = self.take("in", "between", "like").kind
        else:
            token = self.take("op", "in", "between", "like", "is")
            form = token.text if token.kind == "op" else token.kind
        values: list[_Token] = []
        if form == "is":
            negated = self.peek() == "not"
            self.at += negated
            self.take("null")
        elif form == "in":
            self.take("(")
            values.append(self.take(*_LITERALS))
            while self.peek() == ",":
                self.at += 1
                values.append(self.take(*_LITERALS))
            self.take(")")
        elif form == "between":
            values.append(self.take(*_LITERALS))
            self.take("and")
            values.append(self.take(*_LITERALS))
        else:
            values.append(self.take("string") if form == "like" else self.take(*_LITERALS))
        # between is an And; a negated in/like/between is also wrapped in a Not
        depth = 1 + (form == "between") + (negated and form != "is")
        if self.error is None:
            try:
                return _predicate(self.spec, column, form, negated, values), depth
            except InvalidFieldError as exc:
                self.error = exc
        return IsNull(column), depth  # a stand-in: parse() raises self.error instead of returning

    def _after_operator(self, token: _Token) -> bool:
        """Whether ``token`` stands where a value goes (after a comparison, ``like``,
        ``between``, or in an ``in (...)`` list)."""
        at = self.tokens.index(token)
        return at > 0 and self.tokens[at - 1].kind in ("op", "like", "between", "(", ",")

    def unexpected(self, token: _Token) -> WhereSyntaxError:
        pos = token.pos + 1
        if token.kind == "end":
            return WhereSyntaxError(f"where: unexpected end of expression at position {pos}", position=pos)
        if token.kind == "char":
            return WhereSyntaxError(f"where: unexpected character {token.text!r} at position {pos}", position=pos)
        hint = ""
        if token.text.lower() in KEYWORDS and self.spec.has_column(token.text):
            hint = f" ({token.text!r} is a keyword: a column of that name cannot be used in a where-clause)"
        elif token.kind == "name" and not self.spec.has_column(token.text) and self._after_operator(token):
            quoted = token.text.replace("'", "''")
            hint = f"; text values are quoted: '{quoted}'"
        return WhereSyntaxError(f"where: unexpected {describe(token.text)} at position {pos}{hint}", position=pos)


def _predicate(spec: TableSpec, column: str, form: str, negated: bool, values: list[_Token]) -> Expr:
    """The expression of one predicate; ``form`` is its operator or keyword."""
    ftype = spec.type_of(column)
    expr: Expr
    if form == "is":
        return IsNull(column, negated=negated)
    if form == "like":
        if ftype is not FieldType.STRING:
            raise InvalidFieldError(f"like needs a string column; {column!r} is {ftype}", column=column)
        expr = Like(column, _unquote(values[0].text))
    else:
        literals = [_literal(value, column, ftype) for value in values]
        if form == "in":
            expr = In(column, tuple(literals))
        elif form == "between":
            expr = And((Compare(column, ">=", literals[0]), Compare(column, "<=", literals[1])))
        else:
            return Compare(column, {"=": "==", "<>": "!="}.get(form, form), literals[0])
    return Not(expr) if negated else expr


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'")


def _literal(token: _Token, column: str, ftype: FieldType) -> Any:
    """A literal's value for ``column``: a quoted one is a string, a timestamp or
    ``'b64:...'`` bytes; a number is a number (an integer column's has no point);
    ``true``/``false`` a bool; each as the column's type reads its text form."""
    kind = token.kind
    if kind == "null":
        return None
    impl = ftype.impl
    if kind == "string":
        text = _unquote(token.text)
        if not (impl is STRING or impl is TIMESTAMP or (impl is BYTES and text.startswith("b64:"))):
            raise _mistyped(column, ftype, f"'{text}'")
    elif kind == "number":
        text = token.text
        if not impl.numeric or (impl.integer and not text.lstrip("+-").isdigit()):
            raise _mistyped(column, ftype, text)
        if impl.integer:
            try:
                return impl.validate(int(text), column)
            except ValueError:  # more digits than int() converts: beyond any integer column
                raise InvalidFieldError(
                    f"where: {describe(text)} is out of range for {ftype} column {column!r}", column=column
                ) from None
    elif impl is not BOOL:
        raise _mistyped(column, ftype, kind)
    else:
        text = kind
    return impl.validate(impl.from_word(text, column), column)


def _mistyped(column: str, ftype: FieldType, shown: str) -> InvalidFieldError:
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    hint = ftype.impl.literal_hint
    return InvalidFieldError(f"where: {shown} is not a {ftype} value for column {column!r}{hint}", column=column)
