"""Issue 38: an unknown command, table, column or profile within two edits of a known
one ends its error line with ``(did you mean 'scan'?)``; an unquoted ``--where`` word
that is not a column says how text values are written. Real processes, one store."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Kvctl, assert_one_error, run_process

from spi.suggest import closest, distance


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A RocksDB store with a small ``penguins`` table."""
    url = f"rocksdb://{tmp_path / 'db'}"
    kv = Kvctl(url)
    kv.ok("table", "create", "penguins", "--field", "id:long", "--field", "species:string",
          "--field", "body_mass_g:long", "--pk", "id")  # fmt: skip
    kv.ok("put", "penguins", '{"id": 1, "species": "Adelie", "body_mass_g": 3750}')
    return url


@pytest.mark.parametrize(
    ("args", "code", "ending"),
    [
        (["sacn", "penguins"], 2, "No such command 'sacn' (did you mean 'scan'?)"),
        (["table", "lsit"], 2, "No such command 'lsit' (did you mean 'list'?)"),
        (["scan", "pengiuns"], 1, "(did you mean 'penguins'?)"),
        (["table", "describe", "pengiun"], 1, "(did you mean 'penguins'?)"),
        (["scan", "penguins", "--columns", "specis"], 2, "has no column 'specis' (columns: id, species, body_mass_g) (did you mean 'species'?)"),
        (["stats", "penguins", "--column", "body_mas_g"], 2, "(did you mean 'body_mass_g'?)"),
        (["scan", "penguins", "--where", "specis = 'Adelie'"], 2, "(did you mean 'species'?)"),
        (["scan", "penguins", "--where", "species = Adelie"], 2, "unexpected 'Adelie' at position 11; text values are quoted: 'Adelie'"),
        (["count", "penguins", "--where", "species in ('Gentoo', Adelie)"], 2, "text values are quoted: 'Adelie'"),
    ],
)  # fmt: skip
def test_suggestions_end_the_error_line(url: str, args: list[str], code: int, ending: str) -> None:
    res = run_process("--url", url, *args)
    assert_one_error(res, code)
    assert res.err.strip().endswith(ending), res.err


def test_nothing_close_suggests_nothing(url: str) -> None:
    for args in (["frobnicate"], ["scan", "walruses"], ["scan", "penguins", "--columns", "wingspan"]):
        res = run_process("--url", url, *args)
        assert "did you mean" not in res.err, res
    res = run_process("--url", url, "scan", "penguins", "--where", "species = 'Adelie' adn id = 1")
    assert res.code == 2 and "quoted" not in res.err, res


def test_an_unknown_profile(tmp_path: Path) -> None:
    config = tmp_path / "kvctl.toml"
    config.write_text(f'[profiles.local]\nurl = "rocksdb://{tmp_path / "db"}"\n[profiles.prod]\nurl = "memory://"\n')
    res = run_process("--config", str(config), "--profile", "lcoal", "table", "list")
    assert_one_error(res, 2)
    assert res.err.strip().endswith("(profiles: local, prod) (did you mean 'local'?)"), res.err


def test_the_distance_counts_a_swap_as_one_edit() -> None:
    assert distance("sacn", "scan") == 1 and distance("pengiuns", "penguins") == 1
    assert distance("kitten", "sitting") == 3 and distance("", "ab") == 2
    assert closest("scna", ["scan", "stats", "count"]) == "scan" and closest("xyzw", ["scan"]) is None
