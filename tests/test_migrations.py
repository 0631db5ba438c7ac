"""Versioned migrations: loading, applying once in order, status, failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import Kvctl, assert_one_error

import spi
from migrations import MigrationFileError, MigrationStateError, load_directory, migrate, status

V1 = {
    "description": "orders table",
    "steps": [
        {
            "create_or_update": {
                "name": "orders",
                "fields": [{"name": "id", "type": "long"}, {"name": "status", "type": "string"}],
                "primary_key": ["id"],
            }
        }
    ],
}
V2 = {
    "steps": [
        {
            "create_or_update": {
                "name": "orders",
                "fields": [
                    {"name": "id", "type": "long"},
                    {"name": "status", "type": "string"},
                    {"name": "total", "type": "double"},
                ],
                "primary_key": ["id"],
                "indexes": ["status"],
            }
        },
        {"drop": "legacy"},
    ]
}
V3_PY = '''"""Backfill totals."""

def up(provider):
    provider.table("orders").update_range(changes={"total": 0.0})
'''


def write(folder: Path, name: str, content: Any) -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "migrations"
    d.mkdir()
    write(d, "0001_orders.json", V1)
    write(d, "0002_status_index.json", V2)
    write(d, "0003_backfill.py", V3_PY)
    return d


def test_apply_in_order_once(folder: Path) -> None:
    p = spi.connect("memory://")
    p.admin.create(spi.TableSpec("legacy", [spi.Field("k", "long")], ["k"]))
    found = load_directory(folder)
    assert [m.version for m in found] == [1, 2, 3] and found[2].description == "Backfill totals."
    assert migrate(p, found, target=1) == [1]
    p.table("orders").upsert({"id": 1, "status": "open"})
    assert [s.state for s in status(p, found)] == ["applied", "pending", "pending"]
    assert migrate(p, found) == [2, 3]
    assert migrate(p, found) == []
    assert p.admin.get_spec("orders").indexes == ("status",) and not p.admin.exists("legacy")
    assert dict(p.table("orders").read((1,))) == {"id": 1, "status": "open", "total": 0.0}


def test_edited_applied_migration_is_refused(folder: Path) -> None:
    p = spi.connect("memory://")
    migrate(p, load_directory(folder))
    write(folder, "0001_orders.json", {**V1, "description": "changed"})
    with pytest.raises(MigrationStateError, match="changed after it was applied"):
        migrate(p, load_directory(folder))
    assert [s.modified for s in status(p, load_directory(folder))] == [True, False, False]


def test_failed_step_is_not_recorded_and_can_be_rerun(folder: Path) -> None:
    p = spi.connect("memory://")
    bad = {
        "steps": [
            {
                "create_or_update": {
                    "name": "orders",
                    "fields": [{"name": "id", "type": "string"}],
                    "primary_key": ["id"],
                }
            }
        ]
    }
    write(folder, "0004_bad.json", bad)
    with pytest.raises(spi.IncompatibleSchemaError, match="migration 4 step 0"):
        migrate(p, load_directory(folder))
    assert [s.state for s in status(p, load_directory(folder))] == ["applied", "applied", "applied", "pending"]
    (folder / "0004_bad.json").unlink()
    write(folder, "0004_fixed.json", {"steps": [{"drop": "nothing_here"}]})
    assert migrate(p, load_directory(folder)) == [4]


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("1_x.txt.json", "{}", "named"),
        ("0001_a.json", "{not json", "not valid JSON"),
        ("0001_a.json", {"steps": [{"rename": "x"}]}, "unknown kind"),
        ("0001_a.json", {"steps": [{"drop": "bad name"}]}, "step 0"),
        ("0001_a.py", "raise RuntimeError('boom')", "failed to import"),
        ("0001_a.py", "x = 1", "define"),
    ],
)
def test_bad_files(tmp_path: Path, name: str, content: Any, match: str) -> None:
    write(tmp_path, name, content)
    with pytest.raises(MigrationFileError, match=match):
        load_directory(tmp_path)


def test_duplicate_versions(tmp_path: Path) -> None:
    write(tmp_path, "0001_a.json", V1)
    write(tmp_path, "1_b.json", V1)
    with pytest.raises(MigrationFileError, match="also used"):
        load_directory(tmp_path)


def test_cli_migrate(folder: Path, tmp_path: Path) -> None:
    kv = Kvctl(f"rocksdb:{tmp_path}/db")
    assert kv.ok("migrate", str(folder), "--to", "2").out.strip() == "2"
    states = [json.loads(line)["state"] for line in kv.ok("migrate", str(folder), "--status").lines()]
    assert states == ["applied", "applied", "pending"]
    assert kv.ok("migrate", str(folder)).out.strip() == "1"
    assert kv.ok("migrate", str(folder)).out.strip() == "0"
    assert_one_error(kv("migrate", str(tmp_path / "missing")), 2)
    write(folder, "0001_orders.json", {**V1, "description": "edited"})
    assert_one_error(kv("migrate", str(folder)), 1)
