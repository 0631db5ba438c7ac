"""Every ``--help`` page renders cleanly, and docs/cli.md's command reference is
generated from them (scripts/gen-cli-docs.py; this test fails when it is stale).

The command tree is walked with click's public API (``list_commands`` and
``get_command`` on each group), so lazily loaded commands are covered too.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from kvctl.app import app

GENERATOR = Path(__file__).resolve().parent.parent / "scripts" / "gen-cli-docs.py"
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
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", res.stdout)  # Typer forces a terminal on CI (GITHUB_ACTIONS)


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


def test_the_command_reference_in_docs_is_up_to_date() -> None:
    """docs/cli.md's command reference is what scripts/gen-cli-docs.py writes now (as CI runs it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    proc = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr or proc.stdout


def test_the_generator_finds_and_fixes_a_stale_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TERMINAL_WIDTH", "FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "CLICOLOR_FORCE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in HELP_ENV.items():
        monkeypatch.setenv(name, value)  # restored after the test: main() sets them too
    generator = _load_script(GENERATOR)
    fresh = generator.DOC.read_text(encoding="utf-8")
    doc = tmp_path / "cli.md"
    doc.write_text(fresh.replace("Print rows in key order", "Print rows in some order"), encoding="utf-8")
    monkeypatch.setattr(generator, "DOC", doc)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0
    assert doc.read_text(encoding="utf-8") == fresh
    assert generator.main(["--check"]) == 0


def _load_script(path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_cli_docs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
