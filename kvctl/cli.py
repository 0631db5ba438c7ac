"""The ``kvctl`` command (placeholder until the CLI issue lands)."""

from __future__ import annotations

import sys

from kvctl import __version__


def main() -> None:
    """Entry point of the ``kvctl`` console script."""
    if sys.argv[1:] == ["--version"]:
        print(f"kvctl {__version__}")
        return
    print("kvctl: only --version is implemented so far", file=sys.stderr)
    raise SystemExit(2)
