"""The ``?name=value`` options of provider URLs, parsed and checked in one place.

Every provider reads its options through :class:`UrlOptions`, so they all take the
same spellings (``busy_timeout=2.5``, ``sync=true|false|1|0|yes|no|on|off``), the
last of a repeated option wins, and every mistake is a one-line :class:`UrlError`
naming the option: a malformed query, a value of the wrong kind, an unknown option.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import overload
from urllib.parse import parse_qsl

from spi.errors import UrlError

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class UrlOptions:
    """The options of one URL; read each with a typed getter, then call :meth:`finish`."""

    def __init__(self, pairs: Iterable[tuple[str, str]], provider: str) -> None:
        """The options ``pairs`` (name, value) in URL order; ``provider`` names the
        provider in errors (e.g. ``"rocksdb"``)."""
        self.provider = provider
        self._values = dict(pairs)
        self._known: list[str] = []

    @classmethod
    def parse(cls, query: str, provider: str) -> UrlOptions:
        """The options of a URL's query string (the part after ``?``)."""
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError:
            raise UrlError(f"malformed {provider} URL options; expected ?name=value&name=value") from None
        return cls(pairs, provider)

    def _take(self, name: str) -> str | None:
        self._known.append(name)
        return self._values.pop(name, None)

    def text(self, name: str, default: str) -> str:
        """Option ``name`` as given."""
        value = self._take(name)
        return default if value is None else value

    @overload
    def seconds(self, name: str, default: float) -> float: ...
    @overload
    def seconds(self, name: str, default: None) -> float | None: ...
    def seconds(self, name: str, default: float | None) -> float | None:
        """Option ``name`` as a non-negative, finite number of seconds (``default``,
        which may be None for "not given", when absent)."""
        value = self._take(name)
        if value is None:
            return default
        try:
            seconds = float(value)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or seconds < 0:
            raise UrlError(f"{name} must be a non-negative number of seconds, got {value!r}")
        return seconds

    def count(self, name: str, default: int) -> int:
        """Option ``name`` as a non-negative integer."""
        value = self._take(name)
        if value is None:
            return default
        if not value.isascii() or not value.isdigit():
            raise UrlError(f"{name} must be a non-negative integer, got {value!r}")
        return int(value)

    def flag(self, name: str, default: bool) -> bool:
        """Option ``name`` as a boolean (``true/false``, ``1/0``, ``yes/no``, ``on/off``)."""
        value = self._take(name)
        if value is None:
            return default
        if value.lower() not in _TRUE | _FALSE:
            raise UrlError(f"{name} must be true or false, got {value!r}")
        return value.lower() in _TRUE

    def rest(self) -> dict[str, str]:
        """The options not read yet (for providers that pass them on, e.g. to libpq)."""
        rest, self._values = self._values, {}
        return rest

    def finish(self) -> None:
        """:class:`UrlError` if an option was given that no getter read."""
        if self._values:
            unknown = ", ".join(sorted(self._values))
            known = ", ".join(self._known) or "none"
            raise UrlError(f"unknown {self.provider} URL option(s): {unknown} (known: {known})")


__all__ = ["UrlOptions"]
