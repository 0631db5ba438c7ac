"""Writes of one long transaction kept on disk, not in memory: the sorted runs of a
range update or delete on a store that commits a sorted stream (RocksDB ingests it as
one file, atomically).

A :class:`~spi.kv.buffer.WriteBuffer` that may spill (:meth:`WriteBuffer.allow_spill`)
moves its buffered writes here, sorted, once they pass a size, and its change-feed
events in call order; the commit then merges the runs (a later run's write of a key
wins) with what is still buffered and hands the merged stream to the store
(:meth:`~spi.kv.store.StoreSession.commit_sorted`). Each run is a temp file of msgpack
blocks of :data:`BLOCK` writes, read back a block at a time, so memory holds a block
per run, whatever the transaction's length.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import IO, Any

import msgspec

from spi.blockfile import read_blocks, temp_file, write_block

BLOCK = 4096
"""Writes (or events) per stored block: what a run holds in memory while merged."""

Write = tuple[bytes, "bytes | None"]


class SpilledWrites:
    """Sorted runs of writes and the events of one transaction, in temp files."""

    def __init__(self) -> None:
        self._runs: list[IO[bytes]] = []
        self._events: IO[bytes] | None = None
        self._encoder = msgspec.msgpack.Encoder()

    @property
    def runs(self) -> int:
        """How many runs were spilled."""
        return len(self._runs)

    def add_run(self, keys: list[bytes], values: list[bytes | None]) -> None:
        """Spill the writes ``values[i]`` under ``keys[i]`` (keys distinct, in order)."""
        run = temp_file("kvctl-spill-")
        self._runs.append(run)
        for at in range(0, len(keys), BLOCK):
            write_block(run, self._encoder, [keys[at : at + BLOCK], values[at : at + BLOCK]])

    def add_events(self, events: list[Any]) -> None:
        """Spill change-feed events, after the ones spilled before."""
        if not events:
            return
        if self._events is None:
            self._events = temp_file("kvctl-events-")
        for at in range(0, len(events), BLOCK):
            write_block(self._events, self._encoder, events[at : at + BLOCK])

    def has_events(self) -> bool:
        """Whether any event was spilled."""
        return self._events is not None

    def events(self) -> Iterator[Any]:
        """The spilled events, in the order they were added (each as the tuple it was)."""
        if self._events is None:
            return
        for block in read_blocks(self._events):
            for event in block:
                yield tuple(event)

    def merged(self, *later: Iterable[Write]) -> Iterator[Write]:
        """Every spilled write and then the writes of ``later`` (each sorted, distinct
        keys), merged into one stream in key order (see :func:`merge_writes`)."""
        return merge_writes(*map(_run_writes, self._runs), *later)

    def close(self) -> None:
        """Drop the temp files."""
        for run in self._runs:
            run.close()
        self._runs.clear()
        if self._events is not None:
            self._events.close()
            self._events = None


def merge_writes(*streams: Iterable[Write]) -> Iterator[Write]:
    """The writes of ``streams`` (each in key order, distinct keys) as one stream in key
    order; of the writes to one key, the last stream's."""
    merged = heapq.merge(*streams, key=lambda write: write[0])  # stable: earlier streams first
    pending = next(merged, None)
    if pending is None:
        return
    for write in merged:
        if write[0] != pending[0]:
            yield pending
        pending = write
    yield pending


def _run_writes(run: IO[bytes]) -> Iterator[Write]:
    """A run's writes, in key order."""
    for keys, values in read_blocks(run):
        yield from zip(keys, values)
