"""The examples of the README and docs/ do what they say (issue 35: docs true).

- Every ``kvctl`` command of a ``sh`` block (each side of a pipe too) names a real
  command and parses: its options exist and take the values given (click's own
  parser, nothing run; placeholders such as ``a``/``b`` profiles or a server at
  ``db`` are fine, as parsing reads no URL).
- The README's quickstart runs for real, command by command, on a RocksDB store in a
  temp folder with an ``orders.csv`` that holds the rows its commands read (the
  dashboard aside: tests/test_dashboard*.py drive it in a terminal).
- The README's SPI example runs as it is, on ``memory://``.
"""

from __future__ import annotations

import csv
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_support import run_process
from typer.core import TyperGroup

from kvctl.app import app

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(path: Path, language: str) -> list[str]:
    """The fenced code blocks of ``language`` in a Markdown file."""
    return re.findall(rf"^```{language}\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def shell_commands(block: str) -> list[list[str]]:
    """The ``kvctl`` commands of a shell block, as argument lists (continuations
    joined, comments dropped, each side of a pipe apart)."""
    commands = []
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():
        words = shlex.split(line, comments=True)
        while words:
            part, words = (words[: words.index("|")], words[words.index("|") + 1 :]) if "|" in words else (words, [])
            if part and part[0] == "kvctl":
                commands.append(part[1:])
    return commands


EXAMPLES = [(path.relative_to(REPO), args) for path in DOCS for b in blocks(path, "sh") for args in shell_commands(b)]


def parse(args: list[str]) -> None:
    """Parse ``kvctl ARGS`` down to its command, as click would before running it.

    A group stops parsing at its first argument that is not an option (click's
    ``allow_interspersed_args`` is off for groups), so what is left after it,
    ``ctx.args``, is the tail of ``args`` after the subcommand's name."""
    command: Any = typer.main.get_command(app)
    ctx = command.make_context("kvctl", list(args))
    while isinstance(command, TyperGroup):
        at = len(args) - len(ctx.args) - 1
        # With arguments left, the word before them is the subcommand; without, the
        # last word may be one, or the value of an option.
        if not ctx.args and (at < 0 or args[at].startswith("-") or (at > 0 and args[at - 1].startswith("-"))):
            return  # only options: the group runs by itself
        name, args = args[at], list(ctx.args)
        sub = command.get_command(ctx, name)
        assert sub is not None, f"no command {name!r}"
        command, ctx = sub, sub.make_context(name, list(args), parent=ctx)


def test_the_docs_have_shell_examples() -> None:
    assert len(EXAMPLES) >= 20
    assert {str(p) for p, _ in EXAMPLES} >= {"README.md", "docs/cli.md", "docs/cutover.md"}


@pytest.mark.parametrize(("doc", "args"), EXAMPLES, ids=[f"{p}: kvctl {shlex.join(a)}" for p, a in EXAMPLES])
def test_every_shell_example_parses(doc: Path, args: list[str]) -> None:
    parse(args)


def _orders(path: Path) -> None:
    """The quickstart's orders: regions eu and us, ids 1 to 200, some open orders of
    990 and more."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["region", "id", "status", "total", "created"])
        for region in ("eu", "us"):
            for i in range(1, 201):
                status = "open" if i % 3 else "shipped"
                writer.writerow([region, i, status, f"{i * 5.5:.2f}", f"2024-05-{1 + i % 28:02d}T12:00:00Z"])


def test_the_readme_quickstart_runs(tmp_path: Path) -> None:
    (quickstart,) = [b for b in blocks(REPO / "README.md", "sh") if "kvctl config show" in b]
    _orders(tmp_path / "orders.csv")
    env = {"KVCTL_URL": "rocksdb:./data", "HOME": str(tmp_path), "XDG_DATA_HOME": None, "XDG_CONFIG_HOME": None}
    ran = []
    for args in shell_commands(quickstart):
        if args[0] == "dashboard":
            continue
        res = run_process(*args, env=env, cwd=tmp_path)
        assert res.code == 0, (args, res)
        ran.append((args[0], res))
    outputs = dict(ran)
    assert "region" in outputs["get"].out and "42" in outputs["get"].out
    assert len(outputs["scan"].lines()) >= 1
    assert (tmp_path / "backup").is_dir()


def test_the_readme_spi_example_runs() -> None:
    example = next(b for b in blocks(REPO / "README.md", "python") if "spi.connect" in b)
    namespace: dict[str, Any] = {}
    exec(compile(example, "README.md", "exec"), namespace)
    orders = namespace["orders"]
    assert orders.read(("eu", 1))["total"] == 14.5  # 10, then 12.5, then +1 twice
    assert orders.read(("eu", 2))["status"] == "reserved"


@pytest.mark.parametrize(
    "args",
    [["sacn", "orders"], ["scan", "orders", "--limt", "5"], ["table", "lsit"], ["incr", "orders", "--by"]],
    ids=shlex.join,
)
def test_a_mistyped_example_fails_the_check(args: list[str]) -> None:
    with pytest.raises((typer.TyperException, AssertionError)):
        parse(args)
