"""Which provider kvctl talks to: flags, environment, config file, embedded default.

Precedence (first match wins): ``--url`` / ``--profile`` flags; ``KVCTL_URL`` then
``KVCTL_PROFILE``; the config file's ``default_profile``; RocksDB in the user data
dir. The config file is ``--config`` (env ``KVCTL_CONFIG``), else ``kvctl.toml`` in
the current folder or the nearest parent folder (as git finds ``.git``; the search
stops at the home folder), else ``$XDG_CONFIG_HOME/kvctl/config.toml``
(``~/.config/kvctl/config.toml``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from kvctl.errors import CliError
from spi.registry import mask_password
from spi.suggest import did_you_mean

ENV_URL = "KVCTL_URL"
ENV_PROFILE = "KVCTL_PROFILE"
ENV_CONFIG = "KVCTL_CONFIG"
LOCAL_NAME = "kvctl.toml"
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
    password_env: str | None = None
    """The profile's ``password_env`` variable, if it has one."""
    password_missing: bool = False
    """True when ``password_env`` is not set (only :func:`resolve` with ``need_password=False``
    returns such settings; ``url`` then has no password)."""

    @property
    def masked_url(self) -> str:
        """The URL with any password shown as ``***``."""
        return mask_password(self.url)


def user_config_file(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/kvctl/config.toml`` (``~/.config`` when unset)."""
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kvctl" / "config.toml"


def default_store(env: Mapping[str, str]) -> Path:
    """The embedded default store: ``$XDG_DATA_HOME/kvctl/default`` (``~/.local/share``)."""
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "kvctl" / "default"


def make_private_folders(path: Path) -> None:
    """Create ``path`` and its missing parents owner-only (0700), as the XDG base
    directory spec asks: the default store in it holds the user's data."""
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):
        folder.mkdir(0o700, exist_ok=True)


def find_config_file(flag: str | None, env: Mapping[str, str]) -> tuple[Path | None, str | None]:
    """The config file to use and why: flag, env, the nearest kvctl.toml, user config dir."""
    if flag:
        return _must_exist(Path(flag), "--config"), "flag --config"
    if env.get(ENV_CONFIG):
        return _must_exist(Path(env[ENV_CONFIG]), f"env {ENV_CONFIG}"), f"env {ENV_CONFIG}"
    cwd = Path.cwd()
    local = nearest_local_file(cwd, Path.home())
    if local is not None:
        return local, "./" + LOCAL_NAME if local.parent == cwd else os.path.relpath(local, cwd)
    user = user_config_file(env)
    if user.is_file():
        return user, "user config dir"
    return None, None


def nearest_local_file(start: Path, home: Path, uid: int | None = None) -> Path | None:
    """``kvctl.toml`` in ``start`` or its nearest parent folder holding one.

    The search stops after the home folder; from a folder outside the home folder
    it goes up to the root. A file found there that belongs to another user (not
    ``uid``, default this process's, nor root) is refused, as git refuses a
    repository of dubious ownership: anyone can write a ``/tmp/kvctl.toml``.
    """
    home = home.resolve()
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / LOCAL_NAME
        if candidate.is_file():
            _check_owner(candidate, os.getuid() if uid is None else uid)
            return candidate
        if folder == home:
            break
    return None


def _check_owner(path: Path, uid: int) -> None:
    owner = path.stat().st_uid
    if owner not in (uid, 0):
        raise ConfigError(
            f"config {path}: found by searching the parent folders, but it belongs to another user "
            f"(uid {owner}); use it explicitly with --config {path} if you trust it"
        )


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


@dataclass(frozen=True)
class ProfileUrl:
    """A profile's URL as resolved from the file, and its ``password_env`` state."""

    url: str
    """Relative rocksdb paths made absolute; the password put in when its variable is set."""
    password_env: str | None = None
    password_missing: bool = False


def _password_missing(path: Path, name: str, variable: str | None) -> ConfigError:
    return ConfigError(f"config {path}: key 'profiles.{name}.password_env': environment variable {variable} is not set")


def read_profile(path: Path, data: Mapping[str, Any], name: str, env: Mapping[str, str], given_by: str) -> ProfileUrl:
    """Profile ``name`` of a loaded config file; an unset ``password_env`` is reported
    in the result, not raised."""
    profiles = data.get("profiles", {})
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise ConfigError(
            f"config {path}: profile {name!r} (from {given_by}) is not defined (profiles: {known})"
            + did_you_mean(name, profiles)
        )
    profile = profiles[name]
    url = _resolve_relative(profile["url"], path.parent)
    secret_var = profile.get("password_env")
    if secret_var is None:
        return ProfileUrl(url)
    where = f"config {path}: key 'profiles.{name}.url'"
    secret = env.get(secret_var)
    if secret is None:
        _with_password(url, "", where)  # the same checks of the URL, whether the variable is set or not
        return ProfileUrl(url, secret_var, password_missing=True)
    return ProfileUrl(_with_password(url, secret, where), secret_var)


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
    need_password: bool = True,
) -> Settings:
    """Resolve the provider settings by the documented precedence.

    A profile whose ``password_env`` variable is unset is a :class:`ConfigError`,
    unless ``need_password`` is False (``config show``): then the settings say so.
    """
    env = os.environ if env is None else env
    if url and profile:
        raise ConfigError("--url and --profile cannot be used together; pick one")
    if url:
        return Settings(url, "flag --url", *_config_only(config, env))
    if profile:
        return _from_profile(profile, "flag --profile", config, env, need_password)
    if env.get(ENV_URL):
        return Settings(env[ENV_URL], f"env {ENV_URL}", *_config_only(config, env))
    if env.get(ENV_PROFILE):
        return _from_profile(env[ENV_PROFILE], f"env {ENV_PROFILE}", config, env, need_password)
    path, why = find_config_file(config, env)
    if path is not None:
        data = load_config(path)
        name = data.get("default_profile")
        if name is not None:
            return _profile_settings(path, why, data, name, "default_profile", env, need_password)
    return Settings(f"rocksdb://{default_store(env)}", "default", None, None, path, why)


def store_url(word: str, given_by: str, *, config: str | None, env: Mapping[str, str] | None = None) -> str:
    """The URL a store argument (``copy``'s ``SRC``/``DST``, ``diff``'s) names.

    A word holding ``:`` is a provider URL, taken as is; any other word is the name of
    a profile of the config file (``config``: the ``--config`` flag, else found as for
    ``--profile``), its ``password_env`` applied and relative ``rocksdb:`` paths taken
    from the file's folder. An unknown name, or no config file, is a
    :class:`ConfigError` naming ``given_by`` (``argument SRC``) and listing the profiles.
    """
    if ":" in word:
        return word
    env = os.environ if env is None else env
    return _from_profile(word, given_by, config, env, need_password=True).url


def _config_only(config: str | None, env: Mapping[str, str]) -> tuple[None, None, Path | None, str | None]:
    path, why = find_config_file(config, env)
    return None, None, path, why


def _from_profile(
    name: str, given_by: str, config: str | None, env: Mapping[str, str], need_password: bool
) -> Settings:
    path, why = find_config_file(config, env)
    if path is None:
        raise ConfigError(
            f"profile {name!r} (from {given_by}) needs a config file: none given (--config, {ENV_CONFIG}) "
            f"or found ({LOCAL_NAME} in this or a parent folder, {user_config_file(env)})"
        )
    return _profile_settings(path, why, load_config(path), name, given_by, env, need_password)


def _profile_settings(
    path: Path,
    why: str | None,
    data: Mapping[str, Any],
    name: str,
    given_by: str,
    env: Mapping[str, str],
    need_password: bool,
) -> Settings:
    resolved = read_profile(path, data, name, env, given_by)
    if need_password and resolved.password_missing:
        raise _password_missing(path, name, resolved.password_env)
    profile_source = f"file {path} default_profile" if given_by == "default_profile" else given_by
    return Settings(
        resolved.url,
        f"file {path} profile {name}",
        name,
        profile_source,
        path,
        why,
        resolved.password_env,
        resolved.password_missing,
    )


def all_profiles(path: Path, env: Mapping[str, str] | None = None) -> dict[str, ProfileUrl]:
    """Every profile of the config file ``path``, by name (sorted); unset
    ``password_env`` variables are reported, not raised."""
    env = os.environ if env is None else env
    data = load_config(path)
    return {name: read_profile(path, data, name, env, "the file") for name in sorted(data.get("profiles", {}))}
