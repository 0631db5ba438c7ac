"""Provider resolution and ``kvctl config show`` (no store is opened)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_support import Result, assert_one_error
from typer.testing import CliRunner

from kvctl import config
from kvctl.app import app

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
    res = runner.invoke(app, ["--profile", "pg", "table", "list"])
    assert_one_error(Result.of(res), 2)
    assert "KVCTL_PG_PASSWORD is not set" in res.stderr and "profiles.pg.password_env" in res.stderr
    res = runner.invoke(app, ["--profile", "zzz", "config", "show"])
    assert "profile 'zzz'" in res.stderr and res.exit_code == 2


@pytest.fixture
def tree(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder ``home/me`` (HOME) with a project ``proj`` two levels above the cwd."""
    me = home / "me"
    monkeypatch.setenv("HOME", str(me))
    deep = me / "proj" / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    return me


def test_kvctl_toml_is_found_in_a_parent_folder(tree: Path) -> None:
    cfg = write(tree / "proj" / "kvctl.toml", PG_TOML)
    write(tree / "kvctl.toml", 'default_profile = "h"\n[profiles.h]\nurl = "memory://"\n')  # farther: not used
    rows = show()
    assert rows["config_file"] == {"setting": "config_file", "value": str(cfg), "source": "../../kvctl.toml"}
    # a relative rocksdb path stays relative to the file's folder, not to the cwd
    assert rows["url"]["value"] == f"rocksdb://{tree / 'proj' / 'data'}"
    assert rows["profile"]["source"] == f"file {cfg} default_profile"


def test_parent_search_stops_at_the_home_folder(tree: Path) -> None:
    write(tree.parent / "kvctl.toml", 'default_profile = "x"\n[profiles.x]\nurl = "memory://"\n')  # above HOME
    rows = show()
    assert rows["url"]["source"] == "default" and rows["config_file"]["value"] is None
    mine = write(tree / "kvctl.toml", 'default_profile = "h"\n[profiles.h]\nurl = "memory://"\n')
    assert show()["config_file"]["value"] == str(mine)


def test_parent_search_outside_home_goes_up_to_the_root(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home / "elsewhere"))
    cfg = write(home / "work" / "kvctl.toml", 'default_profile = "w"\n[profiles.w]\nurl = "memory://"\n')
    (home / "work" / "a").mkdir()
    monkeypatch.chdir(home / "work" / "a")
    assert show()["config_file"]["value"] == str(cfg)


def test_a_found_file_of_another_user_is_refused(home: Path) -> None:
    cfg = write(home / "work" / "kvctl.toml", 'default_profile = "w"\n[profiles.w]\nurl = "memory://"\n')
    me = os.getuid()
    if me == 0:  # root owns what it writes: give the file away, then look as root
        os.chown(cfg, 12345, -1)
        uid = 0
    else:
        uid = me + 1
    with pytest.raises(config.ConfigError, match="belongs to another user") as info:
        config.nearest_local_file(home / "work", home, uid=uid)
    assert f"--config {cfg}" in str(info.value)


def test_config_show_lists_every_profile_and_a_missing_password(tree: Path) -> None:
    cfg = write(tree / "proj" / "kvctl.toml", PG_TOML + '[profiles.other]\nurl = "memory://"\n')
    res = CliRunner().invoke(app, ["--profile", "pg", "config", "show", "-o", "json"])
    assert res.exit_code == 0, res.stderr
    rows = {r["setting"]: r for r in json.loads(res.stdout)}
    assert rows["url"]["value"] == "postgresql+psycopg://kv@127.0.0.1:5432/kv"
    assert rows["password"] == {"setting": "password", "value": "missing", "source": "env KVCTL_PG_PASSWORD"}
    assert rows["profiles.local.url"] == {
        "setting": "profiles.local.url",
        "value": f"rocksdb://{tree / 'proj' / 'data'}",
        "source": f"file {cfg}",
    }
    assert rows["profiles.other.url"]["value"] == "memory://"
    assert rows["profiles.pg.password"]["value"] == "missing"
    assert [r["setting"] for r in json.loads(res.stdout)][3:] == [
        "config_file", "profiles.local.url", "profiles.other.url", "profiles.pg.url", "profiles.pg.password",
    ]  # fmt: skip
    # with the variable set: masked everywhere, never printed
    res = CliRunner().invoke(app, ["config", "show"], env={"KVCTL_PG_PASSWORD": "hunter2", "COLUMNS": "200"})
    assert res.exit_code == 0 and "hunter2" not in res.stdout + res.stderr
    assert "postgresql+psycopg://kv:***@127.0.0.1:5432/kv" in res.stdout
    # commands that connect still need the password
    res = CliRunner().invoke(app, ["--profile", "pg", "get", "t", "id=1"])
    assert_one_error(Result.of(res), 2)
    assert "KVCTL_PG_PASSWORD is not set" in res.stderr


def test_config_show_reports_a_bad_file_even_with_url(home: Path) -> None:
    cfg = write(home / "work" / "kvctl.toml", 'colour = "red"')
    res = CliRunner().invoke(app, ["--url", "memory://", "config", "show"])
    assert_one_error(Result.of(res), 2)
    assert f"config {cfg}" in res.stderr and res.stdout == ""
    assert CliRunner().invoke(app, ["--url", "memory://", "table", "list"]).exit_code == 0  # only config show reads it
