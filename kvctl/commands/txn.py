"""``kvctl txn``: several writes from a JSON document, all committed together or none."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

import spi
from kvctl import jsontext, options
from kvctl.common import typed_values
from kvctl.errors import NOT_DONE, CliError, message_for
from kvctl.groups import Command
from kvctl.output import OutputFormat, print_document
from kvctl.state import get_state
from spi.textvalues import key_words, to_word
from spi.validate import validate_changes, validate_columns, validate_row

_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # op: (required keys, optional keys), besides "op"; the order of the messages and of --help
    "put": (("table", "row"), ("if_version", "if_absent")),
    "update": (("table", "key", "set"), ("default", "if_version")),
    "delete": (("table", "key"), ("if_version",)),
    "incr": (("table", "key", "column"), ("by",)),
    "cas": (("table", "key", "column", "set"), ("expect", "expect_null")),
}
_OBJECTS = {"row": "put", "key": "", "set": "update", "default": "update"}
"""Keys whose value is a JSON object (in every op, or in the named one only)."""


@dataclass
class Op:
    """One checked operation, ready to run inside a transaction."""

    table: str
    run: Callable[[Any], Any]


class OpFailed(Exception):
    """Operation ``index`` failed; the transaction is rolled back."""

    def __init__(self, index: int, cause: spi.KvError) -> None:
        super().__init__(str(cause))
        self.index = index
        self.cause = cause


def read_document(path: str) -> list[dict[str, Any]]:
    """The ``ops`` list of a txn document (``-``: stdin)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    try:
        doc = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"txn input is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(doc, dict) or set(doc) != {"ops"} or not isinstance(doc["ops"], list):
        raise CliError('txn input must be an object {"ops": [...]}')
    for i, op in enumerate(doc["ops"]):
        _check_shape(i, op)
    return doc["ops"]  # type: ignore[no-any-return]


def _accepted(kind: str) -> str:
    required, optional = _SHAPES[kind]
    return ", ".join(required + optional)


def _check_shape(i: int, op: Any) -> None:
    if not isinstance(op, dict) or op.get("op") not in _SHAPES:
        raise CliError(f'op {i}: must be an object with "op" one of {", ".join(_SHAPES)}')
    kind = op["op"]
    required, optional = _SHAPES[kind]
    keys = set(op) - {"op"}
    missing = [k for k in required if k not in keys]
    if missing:
        raise CliError(f"op {i} ({kind}): missing {', '.join(missing)} (accepted keys: {_accepted(kind)})")
    unknown = sorted(keys - set(required) - set(optional))
    if unknown:
        raise CliError(f"op {i} ({kind}): unknown key(s) {', '.join(unknown)} (accepted keys: {_accepted(kind)})")
    if not isinstance(op["table"], str):
        raise CliError(f'op {i}: "table" must be a string')
    try:
        options.table_name(op["table"])
    except spi.SchemaError as exc:
        raise CliError(f"op {i}: {exc}") from None
    for name, only in _OBJECTS.items():
        if name in op and only in ("", kind) and not isinstance(op[name], dict):
            raise CliError(f"op {i}: {name!r} must be a JSON object")
    if "column" in op and not isinstance(op["column"], str):
        raise CliError(f'op {i}: "column" must be a string')
    if op.get("if_version") is not None and (type(op["if_version"]) is not int or op["if_version"] < 1):
        raise CliError(f"op {i}: if_version must be a positive integer")
    if not isinstance(op.get("if_absent", False), bool):
        raise CliError(f"op {i}: if_absent must be true or false")
    if op.get("if_absent") and op.get("if_version") is not None:
        raise CliError(f"op {i}: if_absent and if_version cannot be used together")
    if "by" in op and (isinstance(op["by"], bool) or not isinstance(op["by"], (int, float))):
        raise CliError(f"op {i}: by must be a number")
    if kind == "cas" and ("expect" in op) == (op.get("expect_null") is True):
        raise CliError(f'op {i} (cas): give exactly one of "expect": VALUE or "expect_null": true')


def prepare(op: dict[str, Any], spec: spi.TableSpec) -> Callable[[Any], Any]:
    """Type and validate an op's values; a function running it on a table handle."""
    kind = op["op"]
    if kind == "put":
        row = validate_row(spec, typed_values(spec, op["row"], "row"))
        version = op.get("if_version")
        if op.get("if_absent"):
            return lambda t: t.insert(row)
        if version is not None:
            key = {c: row[c] for c in spec.primary_key}
            rest = {c: v for c, v in row.items() if c not in key}
            return lambda t: t.update(key, rest, version=version)
        return lambda t: t.upsert(row)
    key = typed_values(spec, op["key"], "key")
    spi.Range.singleton(key).resolve(spec)
    if kind == "update":
        changes = validate_changes(spec, typed_values(spec, op["set"], "set"))
        default = None
        if "default" in op:
            default = validate_changes(spec, typed_values(spec, op["default"], "default"), what="default")
        version = op.get("if_version")
        return lambda t: t.update(key, changes, default=default, version=version)
    if kind == "delete":
        version = op.get("if_version")
        return lambda t: t.delete(key, version=version)
    if kind == "cas":
        return _prepare_cas(op, spec, key)
    column, by = op["column"], op.get("by", 1)
    spec.type_of(column)
    return lambda t: t.increment(key, column, by)


def _prepare_cas(op: dict[str, Any], spec: spi.TableSpec, key: dict[str, Any]) -> Callable[[Any], Any]:
    """A cas op as ``kvctl cas`` runs it (``expect: null`` is ``expect_null``); a failed
    swap raises, so it fails the transaction."""
    column = op["column"]
    spec.type_of(column)
    if spec.is_key(column):
        raise CliError(f"cas needs a non-key column; {column!r} is a key column")
    new = validate_changes(spec, typed_values(spec, {column: op["set"]}, "set"))[column]
    expected = typed_values(spec, {column: op.get("expect")}, "expect")[column]
    if expected is not None:
        validate_columns(spec, {column: expected}, what="expect")
    where = f"{key_words(spec, [key[c] for c in spec.primary_key])} in {op['table']!r}"
    held = "is not null" if expected is None else f"does not hold {to_word(expected)}"
    reason = f"cas did not swap: column {column!r} of row {where} {held}"

    def run(t: Any) -> bool:
        if not t.compare_and_swap(key, column, expected, new):
            raise spi.KvError(reason)
        return True

    return run


def txn(
    ctx: typer.Context,
    file: Annotated[str, typer.Option("--file", help='The {"ops": [...]} document (- for stdin).')] = "-",
    output: options.Output = None,
) -> None:
    """Run put/update/delete/incr/cas ops in one transaction: all commit together or none does.

    Input: {"ops": [OP, ...]}, each OP an object with "op", "table" and the keys of
    its kind (? marks an optional key):

    put: "row": {...}, "if_version": N?, "if_absent": true?

    update: "key": {...}, "set": {...}, "default": {...}?, "if_version": N?

    delete: "key": {...}, "if_version": N?

    incr: "key": {...}, "column": C, "by": N?

    cas: "key": {...}, "column": C, "expect": V or "expect_null": true, "set": V

    For example {"op": "cas", "table": "orders", "key": {"region": "eu", "id": 1},
    "column": "status", "expect": "open", "set": "paid"}.

    Each op does what its command does: put as kvctl put (merges; if_absent inserts;
    if_version merges only at that version), update as kvctl update --set (default:
    the row to create when the key is missing), delete and incr (by defaults to 1) as
    theirs, cas as kvctl cas (expect: the value C must hold, null or expect_null: the
    row is missing or C is null).

    Keys and rows are JSON objects of column to value (bytes as base64, timestamps as
    ISO 8601). An unknown op or key, or a bad value, exits 2 before anything runs.

    Prints {"ok": true, "results": [...]} (per op: put and update the new version,
    delete the deleted flag, incr the new value, cas true), or, when an op fails (a
    version mismatch, a missing row, a cas that does not swap...), {"ok": false,
    "failed_op": I, "reason": "..."} with I counting from 0, and exits 1 with nothing
    applied.
    """
    fmt = get_state(ctx).output_format(output)
    ops = read_document(file)
    provider = get_state(ctx).provider(create=True)
    specs: dict[str, spi.TableSpec] = {}
    prepared: list[Op] = []
    for i, op in enumerate(ops):
        try:
            if op["table"] not in specs:
                specs[op["table"]] = provider.admin.get_spec(op["table"])
            prepared.append(Op(op["table"], prepare(op, specs[op["table"]])))
        except spi.TableNotFoundError as exc:
            _failed(fmt, i, exc)
        except (spi.KvError, CliError) as exc:
            raise CliError(f"op {i}: {exc}") from None

    def body(tx: Any) -> list[Any]:
        results = []
        for i, op in enumerate(prepared):
            try:
                results.append(op.run(tx.table(op.table)))
            except (spi.ConflictError, spi.ProviderUnavailableError):
                raise
            except spi.KvError as exc:
                raise OpFailed(i, exc) from exc
        return results

    try:
        results = provider.run(body)
    except OpFailed as failure:
        _failed(fmt, failure.index, failure.cause)
    print_document(fmt if fmt is OutputFormat.json else OutputFormat.ndjson, {"ok": True, "results": results})


def _failed(fmt: OutputFormat, index: int, cause: Exception) -> None:
    reason = message_for(cause)
    print_document(
        fmt if fmt is OutputFormat.json else OutputFormat.ndjson, {"ok": False, "failed_op": index, "reason": reason}
    )
    raise CliError(f"op {index} failed, nothing was applied: {reason}", NOT_DONE)


def register(app: typer.Typer) -> None:
    """Add ``txn`` to ``app``."""
    app.command(cls=Command)(txn)
