"""What a bulk command that stops part-way says stayed (CLI.md, "Everyday edges").

``put --file``, ``import``, ``copy``, ``apply`` and ``copy --follow`` count what they
commit in a :class:`Tally`. Run under :func:`reporting`, a failure or an interrupt
(Ctrl-C, SIGTERM) after something was committed becomes one ``error:`` line saying
what stayed (``N of M rows written``, ``N revisions applied``) and the command that
finishes the job, with its exit code (an interrupt's 130 or 143, a failure's own, 1
for a bad-input failure: exit 2 means nothing was written). Before anything was
committed the error is left as it is; a provider's "nothing was written" about its
own transaction is dropped once the command has written something.
"""

from __future__ import annotations

import re
import shlex
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import FrameType

import typer

from kvctl.errors import NOT_DONE, USAGE, CliError, exit_code_for, message_for
from kvctl.state import command_line
from spi.registry import mask_password

_NOTHING = re.compile(r"\s*\(nothing was \w+\)|\s*[:;,]?\s*nothing was \w+(?=[;,.)]|$)")
"""A "nothing was written" (copied, applied...) clause of an error message."""


class Tally:
    """What a bulk command has committed so far: rows (of ``total`` when known; at
    least ``rows`` when ``floor``) and, once it counts them, source revisions applied.

    Writes run under :meth:`committing`, so that an interrupt never falls between a
    commit and its count."""

    def __init__(self, total: int | None = None, *, revisions: int | None = None) -> None:
        self.rows = 0
        self.total = total
        self.floor = False
        self.started = False  # writes began that are counted only later (a Spark task's, when it ends)
        self.revisions = revisions  # None: not a command that applies revisions (yet)
        self._pending = False  # an interrupt waits for the next count

    def progress(self, then: Callable[[int], None] | None = None) -> Callable[[int], None]:
        """A ``progress`` callback for one ``load`` (its rows add to those of the loads
        before it), passing its count on to ``then`` (a progress bar); an interrupt
        deferred by :meth:`committing` takes effect here."""
        base = self.rows

        def update(written: int) -> None:
            self.rows = base + written
            if then is not None:
                then(written)
            self._interrupt_if_pending()

        return update

    @contextmanager
    def committing(self) -> Iterator[None]:
        """Defer Ctrl-C (and SIGTERM, which goes the same way) while commits are not
        counted yet: it takes effect at the next count of :meth:`progress`, else at
        the end. A second one takes effect at once (what was written is then a floor)."""
        if threading.current_thread() is not threading.main_thread():  # signals go to the main thread
            yield
            return
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._defer)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
        self._interrupt_if_pending()

    def _defer(self, signum: int, frame: FrameType | None) -> None:
        if self._pending:
            self.floor = True
            raise KeyboardInterrupt
        self._pending = True

    def _interrupt_if_pending(self) -> None:
        if self._pending:
            self._pending = False
            raise KeyboardInterrupt

    def applied(self) -> None:
        """Count one more source revision applied."""
        self.revisions = (self.revisions or 0) + 1

    def nothing(self) -> bool:
        """Whether nothing was committed (nor may have been, uncounted)."""
        return self.rows == 0 and not self.revisions and not self.started

    def said(self) -> str:
        """``N of M rows written`` / ``N revisions applied``, or both."""
        parts = []
        if not self.rows and self.started:
            parts.append(f"some{'' if self.total is None else f' of {self.total}'} rows may have been written")
        elif self.rows or self.revisions is None:
            rows = f"{self.rows} of {self.total} rows" if self.total is not None else _plural(self.rows, "row")
            parts.append(f"{'at least ' if self.floor else ''}{rows} written")
        if self.revisions is not None:
            parts.append(f"{_plural(self.revisions, 'revision')} applied")
        return ", ".join(parts)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class StoppedPartWay(CliError):
    """A bulk command failed or was interrupted after committing something."""


@contextmanager
def reporting(tally: Tally, finish: Callable[[], str], *, keep: tuple[type[Exception], ...] = ()) -> Iterator[Tally]:
    """Run a bulk command's writes: an error or interrupt after ``tally`` counted
    something is re-raised as :class:`StoppedPartWay`, its message ending with what
    stayed and ``finish()`` (how to finish the job: ``to finish (...): kvctl ...``).
    Errors of the types ``keep`` (which say what stayed themselves) are left as they are."""
    try:
        yield tally
    except (KeyboardInterrupt, Exception) as exc:
        if tally.nothing() or isinstance(exc, (BrokenPipeError, StoppedPartWay, *keep)):
            raise
        code = exit_code_for(exc)
        cause = _NOTHING.sub("", message_for(exc))
        raise StoppedPartWay(f"{cause}; {tally.said()}; {finish()}", NOT_DONE if code == USAGE else code) from exc


def rerun(ctx: typer.Context, *, mode: str | None = None, without: Mapping[str, int] | None = None) -> str:
    """This invocation's command line as a shell command (passwords masked), with
    ``--mode`` set to ``mode`` (when given) and without the options of ``without``
    (each option's name and how many values follow it)."""
    args, skip = [], 0
    for arg in command_line(ctx):
        if skip:
            skip -= 1
        elif without and (arg in without or arg.split("=", 1)[0] in without):
            skip = without.get(arg, 0)
        else:
            args.append(mask_password(arg))
    if mode is not None:
        for i, arg in enumerate(args):
            if arg == "--mode" and i + 1 < len(args):
                args[i + 1] = mode
                break
            if arg.startswith("--mode="):
                args[i] = f"--mode={mode}"
                break
        else:
            args += ["--mode", mode]
    return shlex.join(["kvctl", *args])
