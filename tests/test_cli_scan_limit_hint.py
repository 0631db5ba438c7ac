"""``kvctl scan`` cut at the default limit says on stderr, in words a script author
notices, that rows are missing and that ``--all`` prints them all (issue 26)."""

from __future__ import annotations

from pathlib import Path

from cli_support import Kvctl


def test_the_default_limit_names_all_and_an_explicit_limit_the_next_page(tmp_path: Path) -> None:
    kvctl = Kvctl(f"rocksdb://{tmp_path / 'db'}")
    kvctl.ok("table", "create", "t", "--field", "id:long", "--pk", "id")
    kvctl.ok("put", "t", "--file", "-", "--format", "ndjson", input="".join(f'{{"id": {i}}}\n' for i in range(1005)))
    res = kvctl.ok("scan", "t", "-o", "csv")
    assert len(res.lines()) == 1001  # the header and the default 1000 rows
    assert res.err.startswith("1000 rows shown; more remain: output stopped at the default limit of 1000 rows")
    assert "add --all to print every row" in res.err and res.err.count("\n") == 1
    res = kvctl.ok("scan", "t", "-o", "csv", "--limit", "3")
    assert res.err.startswith("3 rows shown; more may remain: continue with --after ")
    assert res.err.rstrip().endswith("(--all prints every row)")
    res = kvctl.ok("scan", "t", "-o", "csv", "--all")
    assert len(res.lines()) == 1006 and res.err == ""
