"""Work cut into pieces that one transaction of the store takes.

A store whose commits are bounded (etcd: ``--max-txn-ops``, ``--max-request-bytes``)
refuses a transaction that is too large with :class:`TransactionTooLargeError`, having
written nothing. Every bulk path — loads, ``apply`` and ``copy --follow``, the Spark
sink, sweeps, index builds — then writes the same work in smaller pieces, each its own
transaction: the piece is halved until the store takes it, and the size that went in
is kept for the work after it. :class:`Fitting` is that rule, written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from spi.errors import TransactionTooLargeError

T = TypeVar("T")


class Fitting:
    """How many items one transaction of the store takes: ``limit`` (None: any number,
    until the store refuses one), halved each time the store refuses a piece."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit

    def attempt(self, wanted: int, write: Callable[[int], T]) -> tuple[int, T]:
        """``write(n)`` for ``n`` = ``wanted`` items or the limit if smaller, ``n`` halved
        while the store refuses it: ``(n, what write returned)``. A piece of one item (or
        none) that the store refuses is raised."""
        while True:
            n = wanted if self.limit is None else min(wanted, self.limit)
            try:
                return n, write(n)
            except TransactionTooLargeError:
                if n <= 1:
                    raise
                self.limit = n // 2

    def pieces(self, total: int, write: Callable[[int, int], T]) -> Iterator[tuple[int, T]]:
        """``write(start, stop)`` over consecutive pieces of ``range(total)`` that the
        store takes (one call, ``write(0, 0)``, when ``total`` is 0); yields ``(stop,
        what write returned)`` as each piece commits."""
        start = 0
        while True:
            n, result = self.attempt(total - start, lambda n: write(start, start + n))  # noqa: B023 - called at once
            start += n
            yield start, result
            if start >= total:
                return


__all__ = ["Fitting"]
