"""Table specs from the command line: ``--spec`` files (JSON or TOML) and ``--field col:type``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import spi
from kvctl import jsontext
from kvctl.errors import CliError


def read_spec_file(path: str, name: str) -> spi.TableSpec:
    """A spec from a JSON or TOML (by ``.toml`` suffix) file, ``-`` for JSON on stdin.

    ``name`` may be left out of the file; if given it must equal the command's NAME.
    """
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read spec file {path}: {exc.strerror}") from None
    data: Any
    if path.lower().endswith(".toml"):
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise CliError(f"spec file {path} is not valid TOML: {exc}") from None
    else:
        try:
            data = jsontext.loads(text)
        except json.JSONDecodeError as exc:
            raise CliError(f"spec file {path} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    try:
        return spi.TableSpec.from_dict(data, name=name)
    except spi.SchemaError as exc:
        raise CliError(f"spec file {path}: {exc}") from None


def parse_field(text: str) -> spi.Field:
    """``col:type`` → a :class:`spi.Field`."""
    column, sep, ftype = text.partition(":")
    if not sep or not column or not ftype:
        raise CliError(f"--field expects col:type (e.g. id:long), got {text!r}")
    return spi.Field(column.strip(), ftype.strip())


def split_list(text: str, option: str) -> list[str]:
    """A comma list (``--pk a,b``) → names."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise CliError(f"{option} expects a comma list of column names, got {text!r}")
    return names


def from_options(name: str, fields: list[str], pk: str | None, indexes: list[str]) -> spi.TableSpec:
    """A spec from ``--field``/``--pk``/``--index`` options."""
    if not fields:
        raise CliError("give --spec FILE or at least one --field col:type")
    if pk is None:
        raise CliError("--pk is required with --field (the key columns, in order: --pk a,b)")
    return spi.TableSpec(name, [parse_field(f) for f in fields], split_list(pk, "--pk"), indexes)


def altered(
    old: spi.TableSpec, add_fields: list[str], add_indexes: list[str], drop_indexes: list[str]
) -> spi.TableSpec:
    """``old`` with fields and indexes added and indexes dropped."""
    missing = [i for i in drop_indexes if i not in old.indexes]
    if missing:
        raise CliError(f"--drop-index: {old.name!r} has no index on {', '.join(missing)}")
    indexes = [i for i in old.indexes if i not in drop_indexes] + list(add_indexes)
    fields = [*old.fields, *(parse_field(f) for f in add_fields)]
    return spi.TableSpec(old.name, fields, old.primary_key, indexes, changes=old.changes)
