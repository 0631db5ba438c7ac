"""A refused PostgreSQL login: "authentication failed", naming the user and host,
never the password, exit 3 (CLI.md: bad credentials are a provider-unavailable error).

The throwaway server (tests/pg_server.py) asks the role ``kvctl_pw`` for its password
(scram-sha-256) and trusts every other role.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from cli_support import Kvctl, assert_one_error
from conftest import need

import spi

WRONG = "Wr0ng;pass'--x"


def _with_password(url: str, password: str | None) -> str:
    """``url`` (the password role's) with another password, or none."""
    parts = urlsplit(url)
    login = parts.username if password is None else f"{parts.username}:{quote(password, safe='')}"
    return f"{parts.scheme}://{login}@{parts.hostname}:{parts.port}{parts.path}?schema=authcheck"


@pytest.fixture
def password_url(pg_server: Any) -> str:
    """The password role's URL (the test server's; an external one has none)."""
    need("a password-protected test role", pg_server.password_url is not None, "external server")
    return str(pg_server.password_url)


def _assert_auth_message(text: str, url: str, password: str) -> None:
    parts = urlsplit(url)
    assert "authentication failed for user 'kvctl_pw'" in text, text
    assert f"{parts.hostname}:{parts.port}" in text, text
    assert "cannot reach" not in text, text
    assert password not in text and quote(password, safe="") not in text, text


def test_wrong_password_is_authentication_failed(password_url: str) -> None:
    provider = spi.connect(_with_password(password_url, WRONG))
    try:
        with pytest.raises(spi.ProviderUnavailableError) as caught:
            provider.admin.list_tables()
    finally:
        provider.close()
    _assert_auth_message(str(caught.value), password_url, WRONG)


def test_cli_wrong_password_exits_3_naming_user_and_host(password_url: str) -> None:
    url = _with_password(password_url, WRONG)
    res = Kvctl(url)("table", "list")
    assert_one_error(res, 3)
    _assert_auth_message(res.err, password_url, WRONG)


def test_cli_missing_password_is_authentication_failed(password_url: str) -> None:
    res = Kvctl(_with_password(password_url, None))("table", "list", env={"PGPASSWORD": None})  # type: ignore[dict-item]
    assert_one_error(res, 3)
    assert "authentication failed for user 'kvctl_pw'" in res.err, res.err
    assert "no password supplied" in res.err, res.err


def test_right_password_connects(password_url: str, pg_server: Any) -> None:
    from pg_server import drop_schemas

    kv = Kvctl(f"{password_url}?schema=authcheck_ok")
    try:
        kv.ok("table", "create", "t", "--field", "k:string", "--pk", "k")
        assert "t" in kv.ok("table", "list", "-o", "csv").out.split()
    finally:
        drop_schemas(pg_server.dsn, ["authcheck_ok"])
