"""Export folders that round-trip (no pyspark import: the CLI checks before starting Spark).

``kvctl export`` writes the table's spec next to its data files, as
``_kvctl_spec.json`` in the ``--spec`` shape (Spark skips files starting with ``_``
when it reads the folder). ``kvctl import --in FOLDER`` takes the format from the
data files' names and, with ``--create``, the spec from that file.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import spi
from kvctl import jsontext

SPEC_FILE = "_kvctl_spec.json"
"""The spec an export writes into its folder."""
FORMATS = ("parquet", "csv", "json", "orc")
SUFFIXES = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".ndjson": "json", ".jsonl": "json", ".orc": "orc"}
"""File name suffixes → Spark formats (NDJSON is Spark's json)."""


class FolderError(spi.InvalidFieldError):
    """A folder whose format or spec cannot be told (exit 2)."""


def local_path(path: str) -> str | None:
    """The local file system path of ``path`` (None for hdfs://, s3a://...)."""
    parts = urlsplit(path)
    if parts.scheme == "file":
        return parts.path
    return path if not parts.scheme or len(parts.scheme) == 1 else None


def write_spec(out: str, spec: spi.TableSpec) -> bool:
    """Write ``spec`` as ``out/_kvctl_spec.json`` when ``out`` is a local folder;
    whether it was written (other file systems get the data files only)."""
    local = local_path(out)
    if local is None or not Path(local).is_dir():
        return False
    text = json.dumps(spec.to_dict(), ensure_ascii=False, indent=2) + "\n"
    (Path(local) / SPEC_FILE).write_text(text, encoding="utf-8")
    return True


def _format_of(name: str) -> str | None:
    """The format a data file's name says (``part-0.snappy.parquet`` → parquet)."""
    for suffix in reversed(Path(name).suffixes):
        found = SUFFIXES.get(suffix.lower())
        if found is not None:
            return found
    return None


def input_format(path: str, given: str | None) -> str:
    """The format of ``import --in path``: ``given`` (``--format``), else the path's
    suffix, else, for a local folder, the one format its data files' names share."""
    if given is not None:
        if given not in FORMATS:
            raise FolderError(f"--format must be one of {', '.join(FORMATS)}, not {given!r}")
        return given
    found = SUFFIXES.get(Path(path.rstrip("/")).suffix.lower())
    if found is not None:
        return found
    local = local_path(path)
    if local is not None and Path(local).is_dir():
        names = [f.name for f in Path(local).iterdir() if f.is_file() and not f.name.startswith(("_", "."))]
        kinds = {kind for kind in map(_format_of, names) if kind is not None}
        if len(kinds) == 1:
            return kinds.pop()
        seen = f"files of {len(kinds)} formats ({', '.join(sorted(kinds))})" if kinds else "no data file it knows"
        raise FolderError(
            f"cannot tell the format of folder {path}: it holds {seen}; pass --format {'|'.join(FORMATS)}"
        )
    raise FolderError(f"cannot tell the format of {path} from its name: pass --format {'|'.join(FORMATS)}")


def spec_for_import(path: str, table: str, pk: list[str] | None) -> spi.TableSpec | None:
    """The spec ``import --create`` makes ``table`` with when the folder ``path``
    holds ``_kvctl_spec.json``: that spec under the name ``table``, keyed by ``pk``
    when given (indexes, ``changes`` and ``ttl`` kept). None without such a file;
    then ``pk`` is required (the spec is inferred from the files' schema)."""
    local = local_path(path)
    file = None if local is None else Path(local) / SPEC_FILE
    if file is None or not file.is_file():
        if pk is None:
            raise FolderError(
                f"--create needs --pk a,b: {path} holds no {SPEC_FILE} (kvctl export writes one into its folder)"
            )
        return None
    try:
        data = jsontext.loads(file.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise spi.SchemaError("a table spec must be an object with fields and primary_key")
        data = {**data, "name": table} | ({"primary_key": pk} if pk is not None else {})
        return spi.TableSpec.from_dict(data)
    except (OSError, ValueError, spi.SchemaError) as exc:
        raise FolderError(f"{file}: {exc}") from None
