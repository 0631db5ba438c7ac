"""Loading migrations from a folder of ``NNNN_description.(json|py)`` files.

JSON form::

    {"description": "orders get a status index",
     "steps": [{"create_or_update": {<--spec object, as the CLI's spec files>}},
               {"drop": "old_table"}]}

Python form: a module with a docstring (the description) and either a list
``steps`` of :class:`~migrations.model.Step` or a function ``up(provider)``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import spi
from migrations.model import Migration, MigrationFileError, Step

_NAME = re.compile(r"(\d+)_([A-Za-z0-9_]+)\.(json|py)\Z")


def load_directory(folder: str | Path) -> list[Migration]:
    """Every migration in ``folder``, sorted by version (all checked before any runs)."""
    root = Path(folder)
    if not root.is_dir():
        raise MigrationFileError(f"migrations folder {str(root)!r} does not exist")
    found: dict[int, Migration] = {}
    for path in sorted(root.iterdir()):
        if path.name.startswith((".", "_")) or path.suffix not in (".json", ".py"):
            continue
        match = _NAME.match(path.name)
        if match is None:
            raise MigrationFileError(f"{path}: migration files are named NNNN_description.json or NNNN_description.py")
        version = int(match.group(1))
        if version in found:
            raise MigrationFileError(f"{path}: version {version} is also used by {found[version].source}")
        loader = _load_json if match.group(3) == "json" else _load_python
        found[version] = loader(path, version, match.group(2).replace("_", " "))
    return [found[v] for v in sorted(found)]


def _checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _load_json(path: Path, version: int, default_description: str) -> Migration:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MigrationFileError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise MigrationFileError(f"{path}: expected an object with a 'steps' list")
    steps = tuple(_json_step(path, i, raw) for i, raw in enumerate(doc["steps"]))
    description = doc.get("description", default_description)
    return Migration(version, str(description), _checksum(path), steps, str(path))


def _json_step(path: Path, index: int, raw: Any) -> Step:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise MigrationFileError(f"{path}: step {index} must be one of {{'create_or_update': spec}}, {{'drop': name}}")
    ((kind, value),) = raw.items()
    try:
        if kind == "create_or_update":
            return Step("create_or_update", spec=spi.TableSpec.from_dict(value))
        if kind == "drop":
            spi.TableSpec(value, [spi.Field("k", "long")], ["k"])  # validates the name
            return Step("drop", table=value)
    except spi.KvError as exc:
        raise MigrationFileError(f"{path}: step {index}: {exc}") from None
    raise MigrationFileError(f"{path}: step {index} has unknown kind {kind!r} (create_or_update, drop)")


def _load_python(path: Path, version: int, default_description: str) -> Migration:
    spec = importlib.util.spec_from_file_location(f"kvctl_migration_{version}", path)
    if spec is None or spec.loader is None:
        raise MigrationFileError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise MigrationFileError(f"{path}: failed to import: {type(exc).__name__}: {exc}") from None
    steps: list[Step]
    if hasattr(module, "steps"):
        steps = list(module.steps)
        if not all(isinstance(s, Step) for s in steps):
            raise MigrationFileError(f"{path}: 'steps' must be a list of migrations.Step")
    elif callable(getattr(module, "up", None)):
        steps = [Step("python", run=module.up)]
    else:
        raise MigrationFileError(f"{path}: define 'steps' or a function 'up(provider)'")
    description = (module.__doc__ or default_description).strip().splitlines()[0]
    return Migration(version, description, _checksum(path), tuple(steps), str(path))
