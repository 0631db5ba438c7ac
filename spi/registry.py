"""Finding and opening providers by URL scheme (``spi.connect``).

Providers register under the entry-point group ``kvctl.providers``: the entry
point's name is a URL scheme and its value a provider class with a
``from_url(url, *, create=True)`` classmethod. The first-party schemes (``memory``,
``rocksdb``, ``postgresql+psycopg``, ``etcd``) resolve from a built-in map without reading
any entry point (another package cannot take them over, and a one-off ``kvctl get``
does not pay the ~20 ms scan of every installed distribution); any other scheme is
looked up among the entry points. Only the chosen provider's module is imported.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spi.errors import UrlError

if TYPE_CHECKING:
    from spi.clock import Clock
    from spi.protocols import Provider

ENTRY_POINT_GROUP = "kvctl.providers"

BUILTIN_PROVIDERS = {
    "memory": "providers.memory:MemoryProvider",
    "rocksdb": "providers.rocksdb:RocksDBProvider",
    "postgresql+psycopg": "providers.postgres:PostgresProvider",
    "etcd": "providers.etcd:EtcdProvider",
}
SCHEME_ALIASES = {"postgres": "postgresql+psycopg", "postgresql": "postgresql+psycopg"}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*\Z")
_USERINFO = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/]*):[^@]*@")


@dataclass(frozen=True)
class ProviderInfo:
    """An installed provider: its URL scheme and where its class lives."""

    scheme: str
    target: str
    source: str


def mask_password(url: str) -> str:
    """``url`` with any password replaced by ``***`` (safe to print).

    The password is found as SQLAlchemy's URL parser finds it (everything between
    the first ``:`` after the user name and the next ``@``), so a password holding an
    unencoded ``?``, ``#`` or ``/`` is masked whole, as it is sent.
    """
    return _USERINFO.sub(r"\g<head>:***@", url, count=1)


def split_scheme(url: Any) -> tuple[str, str]:
    """The normalised scheme of ``url`` and the URL rewritten with it."""
    if not isinstance(url, str) or ":" not in url:
        raise UrlError(
            f"{mask_password(str(url))!r} is not a provider URL; expected scheme:..., "
            f"e.g. memory://, rocksdb:///path or postgresql+psycopg://user@host/db"
        )
    scheme, rest = url.split(":", 1)
    if not _SCHEME.match(scheme):
        raise UrlError(f"{mask_password(url)!r} has a malformed scheme {scheme!r}")
    scheme = scheme.lower()
    canonical = SCHEME_ALIASES.get(scheme, scheme)
    return canonical, f"{canonical}:{rest}"


def installed_providers() -> list[ProviderInfo]:
    """Every provider found: the first-party ones, then the entry points' other schemes."""
    return list(_installed_providers())


@functools.cache
def _installed_providers() -> tuple[ProviderInfo, ...]:
    """:func:`installed_providers`, looked up once per process: reading every installed
    distribution's entry points takes milliseconds, and each ``connect`` needs them."""
    from importlib.metadata import entry_points

    found = {scheme: ProviderInfo(scheme, target, "built-in") for scheme, target in BUILTIN_PROVIDERS.items()}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ProviderInfo(ep.name, ep.value, "entry point"))
    return tuple(sorted(found.values(), key=lambda p: p.scheme))


def load_provider_class(scheme: str) -> Any:
    """Import the provider class registered for ``scheme`` (UrlError if none)."""
    target = BUILTIN_PROVIDERS.get(scheme)
    if target is None:
        info = next((p for p in _installed_providers() if p.scheme == scheme), None)
        if info is None:
            known = ", ".join(p.scheme for p in _installed_providers())
            raise UrlError(f"unknown provider scheme {scheme!r}; installed: {known}")
        target = info.target
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UrlError(f"provider {scheme!r} is registered but cannot be imported: {exc}") from None
    return getattr(module, attr)


def connect(url: str, *, create: bool = True, clock: Clock | None = None) -> Provider:
    """Open the provider for ``url``.

    Malformed URLs and unknown schemes raise :class:`UrlError` at once; an
    unreachable server may surface on first use as ``ProviderUnavailableError``.
    ``create=False`` opens only a store that exists: a store the URL names but
    that does not exist is a :class:`UrlError` (at once, or on first use for a
    server) and nothing is created; what "exists" means is the provider's
    (``docs/spi.md``). Read-only tools use it so a misspelt URL fails instead of
    making a new, empty store.

    ``clock`` (tests: a :class:`spi.clock.ManualClock`) replaces the clock that
    decides when rows expire (default: :func:`time.time_ns`, on PostgreSQL the
    server's clock); a provider that takes none (no ``clock`` attribute) is a
    TypeError.
    """
    scheme, normalized = split_scheme(url)
    cls = load_provider_class(scheme)
    provider: Provider = cls.from_url(normalized, create=create)
    if clock is not None:
        if not hasattr(provider, "clock"):
            provider.close()
            raise TypeError(f"provider {scheme!r} takes no clock")
        provider.clock = clock  # type: ignore[attr-defined]  # not part of the Provider protocol
    return provider
