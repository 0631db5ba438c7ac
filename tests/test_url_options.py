"""URL options: one parser for every provider, so the same mistakes give the same
one-line UrlError everywhere and nothing is opened or created."""

from __future__ import annotations

from pathlib import Path

import pytest

import spi
from spi.urloptions import UrlOptions

_BASES = {"memory": "memory://", "rocksdb": "rocksdb://{tmp}/db", "postgres": "postgresql+psycopg://kv@127.0.0.1:9/kv"}
_BAD = [
    ("busy_timeout=-5", "busy_timeout must be a non-negative number of seconds, got '-5'"),
    ("busy_timeout=nan", "busy_timeout must be a non-negative number of seconds, got 'nan'"),
    ("busy_timeout=", "busy_timeout must be a non-negative number of seconds, got ''"),
    ("changes_retention=-1", "changes_retention must be a non-negative number of seconds, got '-1'"),
    ("nope=1", "unknown"),
    ("a&b", "malformed"),
]


@pytest.mark.parametrize(
    ("provider", "query", "message"),
    [("memory", q, m) for q, m in _BAD]
    + [("rocksdb", q, m) for q, m in _BAD]
    # PostgreSQL hands options it does not know to libpq, so only its own are checked here.
    + [("postgres", "schema=1x", "schema name '1x' is invalid"), ("postgres", "pool_size=-1", "pool_size")]
    + [
        ("postgres", f"{option}={value}", f"{option} must be a non-negative number of seconds, got '{value}'")
        for option in ("connect_timeout", "statement_timeout")
        for value in ("-1", "abc", "nan", "inf")
    ],
)
def test_bad_options_are_url_errors(provider: str, query: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(spi.UrlError) as info:
        spi.connect(_BASES[provider].format(tmp=tmp_path) + "?" + query)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "db").exists()


def test_unknown_option_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(
        spi.UrlError,
        match=r"unknown rocksdb URL option\(s\): bogus \(known: busy_timeout, sync, changes_retention, sweep_interval\)",
    ):
        spi.connect(f"rocksdb://{tmp_path}/db?bogus=1&sync=on")


@pytest.mark.parametrize("pool", ["pool_size=-1", "pool_size=x", "max_overflow=1.5", "pool_size=٣"])
def test_postgres_pool_options_are_counts(pool: str) -> None:
    with pytest.raises(spi.UrlError, match="must be a non-negative integer"):
        spi.connect(f"postgresql+psycopg://kv@127.0.0.1:9/kv?{pool}")


def test_getters_read_each_kind() -> None:
    options = UrlOptions.parse("busy_timeout=2.5&sync=OFF&n=7&name=x&name=y&extra=1", "test")
    assert options.seconds("busy_timeout", 1.0) == 2.5
    assert options.flag("sync", True) is False
    assert options.count("n", 0) == 7
    assert options.text("name", "") == "y"  # the last of a repeated option wins
    assert options.seconds("absent", 3.0) == 3.0
    assert options.rest() == {"extra": "1"}
    options.finish()  # nothing left: rest() took it


@pytest.mark.parametrize("password", ["se#cret", "pa?ss", "s3cr?et&x", "a/b"])
def test_postgres_password_with_url_characters(password: str) -> None:
    """The options and the masked URL come from the same parse as the connection:
    an unencoded ?, # or / in the password neither hides ?schema= nor leaks."""
    url = f"postgresql+psycopg://kv:{password}@127.0.0.1:9/kv?schema=other&pool_size=x"
    with pytest.raises(spi.UrlError) as info:
        spi.connect(url)
    assert "pool_size must be a non-negative integer" in str(info.value)
    from providers.postgres.url import parse_url

    settings = parse_url(url.replace("&pool_size=x", ""))
    assert settings.schema == "other"
    assert password not in settings.masked and settings.masked.startswith("postgresql+psycopg://kv:***@127.0.0.1")


def test_postgres_timeouts_default_to_5_s_to_connect_and_the_server_s_statement_timeout() -> None:
    from providers.postgres.url import parse_url

    settings = parse_url("postgresql+psycopg://kv@127.0.0.1:9/kv")
    assert settings.connect_timeout == 5
    assert settings.connect_args["connect_timeout"] == settings.libpq["connect_timeout"] == 5
    assert "statement_timeout" not in settings.connect_args["options"]  # the server's (or role's) setting holds
    assert "options" not in settings.libpq


@pytest.mark.parametrize(
    ("query", "connect", "statement"),
    [
        ("connect_timeout=10&statement_timeout=30", 10, "-c statement_timeout=30000"),
        ("connect_timeout=2.5&statement_timeout=1.5", 3, "-c statement_timeout=1500"),
        ("connect_timeout=1&statement_timeout=0.0001", 2, "-c statement_timeout=1"),  # libpq waits at least 2 s
        ("connect_timeout=0&statement_timeout=0", 0, "-c statement_timeout=0"),  # 0: no limit (also on the server)
    ],
)
def test_postgres_timeouts_reach_libpq_and_the_session(query: str, connect: int, statement: str) -> None:
    from providers.postgres.arrow import conninfo
    from providers.postgres.url import parse_url

    settings = parse_url(f"postgresql+psycopg://kv@127.0.0.1:9/kv?{query}&options=-c%20work_mem%3D64MB")
    assert settings.connect_timeout == settings.connect_args["connect_timeout"] == connect
    session = settings.connect_args["options"]
    assert session.startswith(f"-c work_mem=64MB {statement} ")  # the user's options first, then kvctl's
    assert f"connect_timeout='{connect}'" in conninfo(settings)  # the Arrow scans' connections too
    assert statement in conninfo(settings)


def test_postgres_keepalives_are_on_and_overridable() -> None:
    from providers.postgres.url import KEEPALIVES, parse_url

    settings = parse_url("postgresql+psycopg://kv@127.0.0.1:9/kv?keepalives_idle=60")
    assert settings.connect_args["keepalives_idle"] == "60"
    for name, value in KEEPALIVES.items():
        assert settings.libpq[name] == (value if name != "keepalives_idle" else "60")
