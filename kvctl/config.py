"""Which provider kvctl talks to: flags, environment, config file, embedded default.

Precedence (first match wins): ``--url`` / ``--profile`` flags; ``KVCTL_URL`` then
``KVCTL_PROFILE``; the config file's ``default_profile``; RocksDB in the user data
dir. The config file is ``--config`` (env ``KVCTL_CONFIG``), else ``./kvctl.toml``,
else ``$XDG_CONFIG_HOME/kvctl/config.toml`` (``~/.config/kvctl/config.toml``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from kvctl.errors import CliError

ENV_URL = "KVCTL_URL"
ENV_PROFILE = "KVCTL_PROFILE"
ENV_CONFIG = "KVCTL_CONFIG"
_TOP_KEYS = {"default_profile", "profiles"}
_PROFILE_KEYS = {"url", "password_env"}


class ConfigError(CliError):
    """A bad config file or conflicting settings (exit 2)."""


@dataclass(frozen=True)
class Settings:
    """The resolved provider settings and where each came from."""

    url: str
    """The URL to connect to; may hold a password: never print it, use ``masked_url``."""
    url_source: str
    profile: str | None = None
    profile_source: str | None = None
    config_file: Path | None = None
    config_source: str | None = None

    @property
    def masked_url(self) -> str:
        """The URL with any password shown as ``***``."""
        from spi import mask_password

        return mask_password(self.url)


def user_config_file(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/kvctl/config.toml`` (``~/.config`` when unset)."""
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kvctl" / "config.toml"


def default_store(env: Mapping[str, str]) -> Path:
    """The embedded default store: ``$XDG_DATA_HOME/kvctl/default`` (``~/.local/share``)."""
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "kvctl" / "default"


def find_config_file(flag: str | None, env: Mapping[str, str]) -> tuple[Path | None, str | None]:
    """The config file to use and why: flag, env, ./kvctl.toml, user config dir."""
    if flag:
        return _must_exist(Path(flag), "--config"), "flag --config"
    if env.get(ENV_CONFIG):
        return _must_exist(Path(env[ENV_CONFIG]), f"env {ENV_CONFIG}"), f"env {ENV_CONFIG}"
    local = Path("kvctl.toml")
    if local.is_file():
        return local.resolve(), "./kvctl.toml"
    user = user_config_file(env)
    if user.is_file():
        return user, "user config dir"
    return None, None


def _must_exist(path: Path, given_by: str) -> Path:
    if not path.is_file():
        raise ConfigError(f"config file {path} (from {given_by}) does not exist")
    return path.resolve()


def load_config(path: Path) -> dict[str, Any]:
    """Read and check a config file; errors name the file, the key and the problem."""
    import tomllib

    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"config {path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path}: invalid TOML: {exc}") from None
    for key in data:
        if key not in _TOP_KEYS:
            raise ConfigError(f"config {path}: key {key!r}: unknown setting (known: default_profile, profiles)")
    default = data.get("default_profile")
    if default is not None and not isinstance(default, str):
        raise ConfigError(f"config {path}: key 'default_profile': must be a string")
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"config {path}: key 'profiles': must be a table of [profiles.NAME] tables")
    for name, profile in profiles.items():
        if not isinstance(profile, dict):
            raise ConfigError(f"config {path}: key 'profiles.{name}': must be a table with url = ...")
        for key, value in profile.items():
            if key not in _PROFILE_KEYS:
                raise ConfigError(
                    f"config {path}: key 'profiles.{name}.{key}': unknown setting (known: url, password_env)"
                )
            if not isinstance(value, str):
                raise ConfigError(f"config {path}: key 'profiles.{name}.{key}': must be a string")
        if "url" not in profile:
            raise ConfigError(f"config {path}: key 'profiles.{name}.url': missing (every profile needs a url)")
    if default is not None and default not in profiles:
        raise ConfigError(f"config {path}: key 'default_profile': names profile {default!r}, which is not defined")
    return data


def profile_url(path: Path, data: Mapping[str, Any], name: str, env: Mapping[str, str], given_by: str) -> str:
    """The URL of profile ``name``: relative rocksdb paths resolved, password injected."""
    profiles = data.get("profiles", {})
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise ConfigError(f"config {path}: profile {name!r} (from {given_by}) is not defined (profiles: {known})")
    profile = profiles[name]
    url = _resolve_relative(profile["url"], path.parent)
    secret_var = profile.get("password_env")
    if secret_var is None:
        return url
    secret = env.get(secret_var)
    if secret is None:
        raise ConfigError(
            f"config {path}: key 'profiles.{name}.password_env': environment variable {secret_var} is not set"
        )
    return _with_password(url, secret, f"config {path}: key 'profiles.{name}.url'")


def _resolve_relative(url: str, folder: Path) -> str:
    """``rocksdb:rel/path`` in a config file is relative to the file's folder."""
    scheme, sep, rest = url.partition(":")
    if not sep or scheme.lower() != "rocksdb" or rest.startswith("/"):
        return url
    path, qmark, query = rest.partition("?")
    return f"rocksdb://{(folder / path).resolve()}{qmark}{query}"


def _with_password(url: str, secret: str, where: str) -> str:
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ConfigError(f"{where}: malformed URL") from None
    if parts.password is not None:
        raise ConfigError(f"{where}: has a password and password_env is set; keep the password out of the file")
    if not host:
        raise ConfigError(f"{where}: password_env needs a URL with a host")
    user = quote(parts.username or "", safe="")
    hostpart = f"[{host}]" if ":" in host else host
    netloc = f"{user}:{quote(secret, safe='')}@{hostpart}" + (f":{port}" if port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def resolve(
    *,
    url: str | None,
    profile: str | None,
    config: str | None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve the provider settings by the documented precedence."""
    env = os.environ if env is None else env
    if url and profile:
        raise ConfigError("--url and --profile cannot be used together; pick one")
    if url:
        return Settings(url, "flag --url", *_config_only(config, env))
    if profile:
        return _from_profile(profile, "flag --profile", config, env)
    if env.get(ENV_URL):
        return Settings(env[ENV_URL], f"env {ENV_URL}", *_config_only(config, env))
    if env.get(ENV_PROFILE):
        return _from_profile(env[ENV_PROFILE], f"env {ENV_PROFILE}", config, env)
    path, why = find_config_file(config, env)
    if path is not None:
        data = load_config(path)
        name = data.get("default_profile")
        if name is not None:
            return Settings(
                profile_url(path, data, name, env, "default_profile"),
                f"file {path} profile {name}",
                name,
                f"file {path} default_profile",
                path,
                why,
            )
    return Settings(f"rocksdb://{default_store(env)}", "default", None, None, path, why)


def _config_only(config: str | None, env: Mapping[str, str]) -> tuple[None, None, Path | None, str | None]:
    path, why = find_config_file(config, env)
    return None, None, path, why


def _from_profile(name: str, given_by: str, config: str | None, env: Mapping[str, str]) -> Settings:
    path, why = find_config_file(config, env)
    if path is None:
        raise ConfigError(
            f"profile {name!r} (from {given_by}) needs a config file: none given (--config, {ENV_CONFIG}) "
            f"or found (./kvctl.toml, {user_config_file(env)})"
        )
    data = load_config(path)
    return Settings(
        profile_url(path, data, name, env, given_by), f"file {path} profile {name}", name, given_by, path, why
    )
