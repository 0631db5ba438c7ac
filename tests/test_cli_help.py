"""Every ``--help`` page renders cleanly, and docs/cli.md's command reference is
generated from them (scripts/gen-cli-docs.py; this test fails when it is stale).

The command tree is walked with click's public API (``list_commands`` and
``get_command`` on each group), so lazily loaded commands are covered too.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from kvctl.cli import app

HELP_ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
WIDE_ENV = {**HELP_ENV, "COLUMNS": "400"}


def walk(command: Any, ctx: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, command) of ``command`` and everything below it."""
    yield path, command
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, (path, name)
            yield from walk(sub, typer.Context(sub, info_name=name, parent=ctx), (*path, name))


def commands() -> list[tuple[tuple[str, ...], Any]]:
    root = typer.main.get_command(app)
    return list(walk(root, typer.Context(root, info_name="kvctl")))


def render(path: tuple[str, ...], env: dict[str, str]) -> str:
    res = CliRunner().invoke(app, [*path, "--help"], env=env)
    assert res.exit_code == 0, (path, res.stdout, res.stderr)
    return res.stdout


def paragraphs(text: str | None) -> list[str]:
    """The paragraphs of a help text, each as one line of single-spaced words."""
    body = inspect.cleandoc(text or "").partition("\f")[0]
    return [" ".join(p.split()) for p in body.split("\n\n") if p.strip()]


def test_the_walk_finds_every_command() -> None:
    found = {" ".join(path) for path, _ in commands()}
    assert {"", "get", "scan", "table", "table create", "config show", "export"} <= found


@pytest.mark.parametrize("path", [p for p, _ in commands()], ids=lambda p: " ".join(p) or "kvctl")
def test_help_page_renders_cleanly(path: tuple[str, ...]) -> None:
    command = dict(commands())[path]
    page = render(path, HELP_ENV)
    assert not re.search(r"\{[A-Za-z_][\w-]*\}", page), page  # raw {table} placeholders
    assert "<bool>" not in page, page  # a flag takes no value
    assert all(len(line) <= 100 for line in page.splitlines()), page
    # Every paragraph of the help texts shows whole (no markup ate part of it) and
    # reflowed: on one line when the terminal is wide enough, not broken where the
    # docstring's source lines broke.
    wide = [" ".join(line.replace("│", " ").split()) for line in render(path, WIDE_ENV).splitlines()]
    texts = paragraphs(command.help) + [p for param in command.params for p in paragraphs(getattr(param, "help", None))]
    for paragraph in texts:
        assert any(paragraph in line for line in wide), (paragraph, "\n".join(wide))
