"""Passwords typed on the command line, kept out of other users' ``ps``.

A URL with a password in ``--url`` (or ``--url=``) or in a store argument (``copy``'s
SRC/DST, ``diff``'s) is visible in ``/proc/PID/cmdline`` to every user of the machine.
:func:`hide_passwords`, called first thing by ``kvctl.cli.main``, rewrites the
process's command line with each such password as ``***`` (through setproctitle, which
overwrites the memory the kernel shows, imported only when there is a password to
hide) and warns once on stderr that a profile's ``password_env`` keeps it out of shell
history too (CLI.md, "Everyday edges").
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

WARNING = (
    "warning: a password typed in a URL stays in your shell history (kvctl hid it from ps); "
    "a profile's password_env keeps it out (docs/cli.md, 'Provider resolution')"
)
"""What stderr says once when a password was typed on the command line."""


def mask_argument(arg: str) -> str:
    """``arg`` with the password of the URL it holds (as itself or as ``--opt=URL``)
    replaced by ``***``; any other argument unchanged."""
    if "@" not in arg or "://" not in arg:  # no URL with a user: nothing to import or match
        return arg
    from spi.registry import mask_password  # lazy: only a URL with a user needs it

    head, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    return head + eq + mask_password(value)


def hide_passwords(argv: Sequence[str] | None = None) -> bool:
    """If the command line (``argv``, default the process's own, interpreter included)
    holds a URL with a password, retitle the process with every such password masked
    and print :data:`WARNING` on stderr; whether it did."""
    args = list(sys.orig_argv if argv is None else argv)
    masked = [mask_argument(arg) for arg in args]
    if masked == args:
        return False
    from setproctitle import setproctitle

    setproctitle(" ".join(masked))
    print(WARNING, file=sys.stderr)
    return True
