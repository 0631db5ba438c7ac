"""A one-shot command on ``memory://`` says on stderr, once, that nothing is kept
(issue 26); the dashboard, which keeps its store while it runs, does not."""

from __future__ import annotations

import pytest
from cli_support import Kvctl

from kvctl.state import MEMORY_WARNING, State


def test_a_one_shot_command_on_memory_warns_once_on_stderr() -> None:
    kvctl = Kvctl("memory://")
    res = kvctl("table", "create", "t", "--field", "id:long", "--pk", "id")
    assert res.code == 0 and res.err.count("memory:// keeps nothing") == 1, res
    assert MEMORY_WARNING in res.err and res.err.startswith("warning: ")
    res = kvctl("table", "list")  # the warning, then the empty store's note
    assert res.code == 0 and res.out == "" and res.err == f"{MEMORY_WARNING}\nno kvctl tables in memory://\n"


def test_the_dashboard_does_not_warn(capsys: pytest.CaptureFixture[str]) -> None:
    state = State(url="memory://")
    state.provider(create=False, memory_warning=False)  # as `kvctl dashboard` opens it
    state.close()
    assert capsys.readouterr().err == ""
