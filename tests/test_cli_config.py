"""Provider resolution and ``kvctl config show`` (no store is opened)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Result, assert_one_error
from typer.testing import CliRunner

from kvctl import config
from kvctl.cli import app

PG_TOML = """
default_profile = "local"
[profiles.local]
url = "rocksdb:./data"
[profiles.pg]
url = "postgresql+psycopg://kv@127.0.0.1:5432/kv"
password_env = "KVCTL_PG_PASSWORD"
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated cwd and XDG dirs with no config anywhere."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for var in ("KVCTL_URL", "KVCTL_PROFILE", "KVCTL_CONFIG", "KVCTL_PG_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return tmp_path


def show(*args: str, env: dict[str, str] | None = None) -> dict[str, dict[str, str | None]]:
    res = CliRunner().invoke(app, [*args, "config", "show", "-o", "json"], env=env)
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return {r["setting"]: r for r in json.loads(res.stdout)}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_embedded_default_in_the_user_data_dir(home: Path) -> None:
    rows = show()
    assert rows["url"]["value"] == f"rocksdb://{home / 'xdg-data' / 'kvctl' / 'default'}"
    assert rows["url"]["source"] == "default"
    assert rows["profile"]["value"] is None


def test_precedence_flag_env_file_default(home: Path) -> None:
    cfg = write(home / "work" / "kvctl.toml", PG_TOML)
    # file default_profile, with the relative path resolved against the file's folder
    rows = show()
    assert rows["url"]["value"] == f"rocksdb://{home / 'work' / 'data'}"
    assert rows["url"]["source"] == f"file {cfg} profile local"
    assert rows["profile"]["source"] == f"file {cfg} default_profile"
    # env KVCTL_PROFILE beats the file's default; KVCTL_URL beats KVCTL_PROFILE
    env = {"KVCTL_PROFILE": "pg", "KVCTL_PG_PASSWORD": "s3cret"}
    rows = show(env=env)
    assert rows["profile"] == {"setting": "profile", "value": "pg", "source": "env KVCTL_PROFILE"}
    assert rows["url"]["value"] == "postgresql+psycopg://kv:***@127.0.0.1:5432/kv"
    rows = show(env={**env, "KVCTL_URL": "memory://"})
    assert rows["url"] == {"setting": "url", "value": "memory://", "source": "env KVCTL_URL"}
    # flags beat the environment
    assert show("--url", "memory://?busy_timeout=1", env=env)["url"]["source"] == "flag --url"
    rows = show("--profile", "local", env={**env, "KVCTL_URL": "memory://"})
    assert rows["profile"]["source"] == "flag --profile"
    assert rows["url"]["source"] == f"file {cfg} profile local"


def test_config_file_lookup_order(home: Path) -> None:
    user = write(
        home / "xdg-config" / "kvctl" / "config.toml", 'default_profile = "u"\n[profiles.u]\nurl = "memory://"\n'
    )
    assert show()["config_file"]["value"] == str(user)
    local = write(home / "work" / "kvctl.toml", 'default_profile = "l"\n[profiles.l]\nurl = "memory://"\n')
    assert show()["config_file"]["value"] == str(local)
    other = write(home / "other.toml", 'default_profile = "o"\n[profiles.o]\nurl = "memory://"\n')
    assert show(env={"KVCTL_CONFIG": str(other)})["profile"]["value"] == "o"
    rows = show("--config", str(user), env={"KVCTL_CONFIG": str(other)})
    assert rows["profile"]["value"] == "u" and rows["config_file"]["source"] == "flag --config"


def test_password_comes_from_the_environment_and_is_never_printed(home: Path) -> None:
    write(home / "work" / "kvctl.toml", PG_TOML)
    settings = config.resolve(url=None, profile="pg", config=None, env={"KVCTL_PG_PASSWORD": "p@ss:w/rd"})
    assert settings.url == "postgresql+psycopg://kv:p%40ss%3Aw%2Frd@127.0.0.1:5432/kv"
    res = CliRunner().invoke(app, ["--profile", "pg", "config", "show"], env={"KVCTL_PG_PASSWORD": "p@ss:w/rd"})
    assert res.exit_code == 0 and "p@ss" not in res.stdout + res.stderr and "***" in res.stdout


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("default_profile = [", "invalid TOML"),
        ('colour = "red"', "key 'colour': unknown setting"),
        ("default_profile = 3", "key 'default_profile': must be a string"),
        ('default_profile = "x"\n[profiles.y]\nurl = "memory://"', "key 'default_profile': names profile 'x'"),
        ("[profiles.a]\npassword_env = 'X'", "key 'profiles.a.url': missing"),
        ("[profiles.a]\nurl = 5", "key 'profiles.a.url': must be a string"),
        ("[profiles.a]\nurl = 'memory://'\nuser = 'me'", "key 'profiles.a.user': unknown setting"),
    ],
)
def test_bad_config_names_file_key_and_problem(home: Path, text: str, expected: str) -> None:
    cfg = write(home / "work" / "kvctl.toml", text)
    res = CliRunner().invoke(app, ["config", "show"])
    assert_one_error(Result.of(res), 2)
    assert f"config {cfg}" in res.stderr and expected in res.stderr
    assert res.stdout == ""


def test_bad_settings_are_usage_errors(home: Path) -> None:
    runner = CliRunner()
    cases = [
        (["--url", "memory://", "--profile", "x", "config", "show"], "cannot be used together"),
        (["--profile", "nope", "config", "show"], "needs a config file"),
        (["--config", str(home / "missing.toml"), "config", "show"], "does not exist"),
    ]
    for args, expected in cases:
        res = runner.invoke(app, args)
        assert_one_error(Result.of(res), 2)
        assert expected in res.stderr
    write(home / "work" / "kvctl.toml", PG_TOML)
    res = runner.invoke(app, ["--profile", "pg", "config", "show"])
    assert_one_error(Result.of(res), 2)
    assert "KVCTL_PG_PASSWORD is not set" in res.stderr and "profiles.pg.password_env" in res.stderr
    res = runner.invoke(app, ["--profile", "zzz", "config", "show"])
    assert "profile 'zzz'" in res.stderr and res.exit_code == 2
