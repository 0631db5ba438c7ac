"""Writes of one long transaction kept on disk, not in memory: the sorted runs of a
range update or delete, or of a chunk of a load (:mod:`spi.kv.chunked_load`), on a
store that commits a sorted stream (RocksDB ingests it as SST files, atomically).

A :class:`~spi.kv.buffer.WriteBuffer` that may spill (:meth:`WriteBuffer.allow_spill`)
moves its buffered writes here, sorted, once they pass a size, and its change-feed
events in call order; the commit then merges the runs (a later run's write of a key
wins) with what is still buffered and hands the merged blocks to the store
(:meth:`~spi.kv.store.StoreSession.commit_sorted`). Each run is a temp file of msgpack
blocks of :data:`BLOCK` writes, read back a block at a time, so memory holds a block
per run, whatever the transaction's length.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import IO, Any

import msgspec

from spi.blockfile import read_blocks, temp_file, write_block

BLOCK = 4096
"""Writes (or events) per stored block: what a run holds in memory while merged."""

Write = tuple[bytes, "bytes | None"]
Block = tuple[list[bytes], list["bytes | None"]]
"""Writes ``values[i]`` under ``keys[i]``, keys in order."""


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

    def merged(self, *later: Iterable[Block]) -> Iterator[Block]:
        """Every spilled write and then the writes of ``later`` (each blocks in key order,
        distinct keys), merged into blocks in key order (see :func:`merge_blocks`)."""
        return merge_blocks(*map(read_blocks, self._runs), *later)

    def close(self) -> None:
        """Drop the temp files."""
        for run in self._runs:
            run.close()
        self._runs.clear()
        if self._events is not None:
            self._events.close()
            self._events = None


def merge_blocks(*streams: Iterable[Block]) -> Iterator[Block]:
    """The writes of ``streams`` (each a sequence of ``(keys, values)`` blocks in key
    order, distinct keys) as blocks in key order; of the writes to one key, the last
    stream's. A stretch of a stream below the next key of every other goes out as one
    slice of its block (a load's runs hold long such stretches: its rows, and each
    index value's entries), so the work per write is done in C."""
    heap: list[list[Any]] = []  # [next key, stream, keys, values, position, blocks]
    for index, stream in enumerate(streams):
        blocks = iter(stream)
        for keys, values in blocks:
            if keys:
                heap.append([keys[0], index, keys, values, 0, blocks])
                break
    heapq.heapify(heap)  # (key, stream) pairs are distinct: the comparisons stop there
    while heap:
        top = heap[0]
        _, index, keys, values, at, blocks = top
        end = len(keys)
        rival = None
        if len(heap) > 1:
            rival = heap[1] if len(heap) == 2 or heap[1] < heap[2] else heap[2]
            end = bisect_left(keys, rival[0], at)
        if end > at:
            yield (keys, values) if at == 0 and end == len(keys) else (keys[at:end], values[at:end])
            at = end
        if rival is not None and at < len(keys) and keys[at] == rival[0] and index < rival[1]:
            at += 1  # a later stream writes this key too: its write wins
        if at < len(keys):
            top[0], top[4] = keys[at], at
            heapq.heapreplace(heap, top)
            continue
        for keys, values in blocks:
            if keys:
                top[0], top[2], top[3], top[4] = keys[0], keys, values, 0
                heapq.heapreplace(heap, top)
                break
        else:
            heapq.heappop(heap)


def blocks_of(writes: Iterable[Write]) -> Iterator[Block]:
    """``(key, value)`` pairs as blocks of :data:`BLOCK` writes."""
    pairs = iter(writes)
    while chunk := list(islice(pairs, BLOCK)):
        yield [k for k, _ in chunk], [v for _, v in chunk]
