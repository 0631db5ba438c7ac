"""Revisions as SPI.md promises them, for the kit's assertions ("Change feed, watch
and expiry", "Revisions"): 0 before the first recorded write, then one new revision
per change-fed transaction, greater than every one before it. Not dense: a provider
may leave gaps (etcd's revisions also count writes outside the feed), so the kit
takes revision numbers from what the provider reports and asserts only relations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any


def increasing(revisions: Sequence[int]) -> bool:
    """Whether ``revisions`` are revisions of distinct commits in commit order: each
    greater than 0 and than the one before it (gaps allowed)."""
    return all(isinstance(r, int) and r > 0 for r in revisions) and all(a < b for a, b in pairwise(revisions))


def distinct(revisions: Iterable[int]) -> list[int]:
    """The revisions of a feed's events, one per transaction, in feed order (the
    events of one transaction are adjacent and share its revision)."""
    out: list[int] = []
    for revision in revisions:
        if not out or out[-1] != revision:
            out.append(revision)
    return out


def groups(events: Iterable[Any]) -> list[int]:
    """How many consecutive events share each revision, in feed order: the
    transactions' sizes (``[4, 2]``: one commit of four events, then one of two)."""
    sizes: list[int] = []
    last = None
    for event in events:
        if sizes and event.revision == last:
            sizes[-1] += 1
        else:
            sizes.append(1)
            last = event.revision
    return sizes


class RevisionMap:
    """The order-preserving correspondence between the revisions a provider reports
    and a reference's, built as a run goes: the i-th distinct revision of the one is
    the i-th of the other, 0 is 0, and both sides only grow."""

    def __init__(self) -> None:
        self._to_ref: dict[int, int] = {0: 0}
        self._to_provider: dict[int, int] = {0: 0}
        self.last = (0, 0)
        """The newest pair (provider revision, reference revision)."""

    def pair(self, provider_revision: int, reference_revision: int) -> None:
        """Record that the two sides' revisions correspond: the pair must agree with
        every pair before it and keep both sides strictly increasing."""
        known = self._to_ref.get(provider_revision)
        if known is not None or reference_revision in self._to_provider:
            assert known == reference_revision and self._to_provider[reference_revision] == provider_revision, (
                f"provider revision {provider_revision} pairs with reference revision {reference_revision}, "
                f"but it paired with {known} (reference {reference_revision} with "
                f"{self._to_provider.get(reference_revision)})"
            )
            return
        p_last, r_last = self.last
        assert provider_revision > p_last and reference_revision > r_last, (
            f"the pair {provider_revision} -> {reference_revision} is not after {p_last} -> {r_last}: "
            "revisions must increase on both sides"
        )
        self._to_ref[provider_revision] = reference_revision
        self._to_provider[reference_revision] = provider_revision
        self.last = (provider_revision, reference_revision)

    def pair_feeds(self, provider_revisions: Sequence[int], reference_revisions: Sequence[int]) -> None:
        """Pair the distinct revisions of two feeds of the same transactions, in order."""
        mine, theirs = distinct(provider_revisions), distinct(reference_revisions)
        assert len(mine) == len(theirs), (
            f"the provider's feed has {len(mine)} transactions {mine}, the reference's {len(theirs)} {theirs}"
        )
        for p_revision, r_revision in zip(mine, theirs):
            self.pair(p_revision, r_revision)

    def to_reference(self, provider_revision: int) -> int:
        """The reference's revision for a revision the provider reported (it must be paired)."""
        assert provider_revision in self._to_ref, (
            f"the provider reported revision {provider_revision}, which is none of its commits seen so far "
            f"{sorted(self._to_ref)}"
        )
        return self._to_ref[provider_revision]

    def to_provider(self, reference_revision: int) -> int:
        """The provider's revision for a reference revision, to pass as ``since`` or to
        ``compact``: the paired one; below the newest pair, the provider's revision of
        the newest reference commit at or below it; above, as far above the
        provider's newest as it is above the reference's."""
        if reference_revision < 0:
            return reference_revision  # refused alike on both sides
        if reference_revision in self._to_provider:
            return self._to_provider[reference_revision]
        p_last, r_last = self.last
        if reference_revision > r_last:
            return p_last + (reference_revision - r_last)
        below = max(r for r in self._to_provider if r <= reference_revision)
        return self._to_provider[below]


__all__ = ["RevisionMap", "distinct", "groups", "increasing"]
