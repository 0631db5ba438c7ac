"""Gating conformance groups by capability (model: SQLAlchemy's ``testing.requirements``).

A group of tests that needs more than the core contract is decorated with
:func:`requires`; on a provider that does not declare those capabilities its tests
are reported as skipped with the reason "not applicable", never passed silently.
:func:`need` does the same for an optional package, except that with
``KVCTL_REQUIRE_ALL=1`` (as kvctl's CI sets) a missing package fails the test.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

import pytest

from spi.capabilities import Capability

REQUIRE_ALL_ENV = "KVCTL_REQUIRE_ALL"
_ATTRIBUTE = "required_capabilities"
F = TypeVar("F", bound=Callable[..., Any])


def requires(*capabilities: Capability) -> Callable[[F], F]:
    """Mark a test, or every test of a group class, as needing ``capabilities``."""

    def mark(target: F) -> F:
        if isinstance(target, type):
            for name, member in vars(target).items():
                if name.startswith("test_") and callable(member):
                    mark(member)
            return target
        setattr(target, _ATTRIBUTE, frozenset(getattr(target, _ATTRIBUTE, frozenset())) | set(capabilities))
        return target

    return mark


def required_capabilities(test: Callable[..., Any]) -> frozenset[Capability]:
    """What :func:`requires` recorded on ``test`` (empty: the core contract only)."""
    return frozenset(getattr(test, _ATTRIBUTE, frozenset()))


def skip_unless_capable(provider: Any, test: Callable[..., Any]) -> None:
    """Skip ``test`` as not applicable unless ``provider`` declares what it requires."""
    missing = sorted(required_capabilities(test) - set(provider.capabilities))
    if missing:
        pytest.skip(
            f"not applicable: {type(provider).__name__} does not declare capability {', '.join(map(str, missing))}"
        )


def need(what: str, ok: bool, why: str = "") -> None:
    """Skip the running test unless ``ok`` (a real part it needs is there); with
    ``KVCTL_REQUIRE_ALL=1`` fail it instead, so a broken install cannot hide."""
    if ok:
        return
    message = f"{what} is not available" + (f": {why}" if why else "")
    if os.environ.get(REQUIRE_ALL_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ALL_ENV}=1 turns this skip into a failure)")
    pytest.skip(message)


def need_module(name: str) -> ModuleType:
    """Import ``name`` for the running test, or :func:`need` it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        need(f"the Python package {name!r}", False, str(exc))
        raise  # unreachable: need() skipped or failed


__all__ = ["need", "need_module", "required_capabilities", "requires", "skip_unless_capable"]
