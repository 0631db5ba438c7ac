"""The engine's write buffer against a plain dict model: random writes (single
puts, bulk writes, and the ordered runs a load hands over without a dict insert),
reads of every kind in between, then the commit. Whatever the buffer keeps pending,
every read sees the transaction's writes, and the store ends as the model says."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from providers.memory.provider import MemoryStore, _MemorySession
from spi.kv.buffer import WriteBuffer

KEYS = st.binary(min_size=1, max_size=2).map(lambda b: b"k" + b)
VALUES = st.binary(max_size=3)


class _CheckedSession(_MemorySession):
    """A memory store session that checks what a commit is given: its keys distinct
    and in order, as :meth:`spi.kv.store.StoreSession.commit` requires."""

    def commit(self, range_deletes: list[tuple[bytes, bytes]], keys: list[bytes], values: list[bytes | None]) -> None:
        assert all(a < b for a, b in pairwise(keys)), "commit keys not distinct and in order"
        super().commit(range_deletes, keys, values)


@st.composite
def operations(draw: Any) -> list[tuple[Any, ...]]:
    ops: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(
            st.sampled_from(
                ["run", "many", "put", "get", "get_many", "iterate", "keys", "values", "chunks", "buffered"]
            )
        )
        if kind == "run":
            keys = sorted(draw(st.sets(KEYS, max_size=8)))
            ops.append((kind, keys, [draw(VALUES) for _ in keys]))
        elif kind == "many":
            keys = draw(st.lists(KEYS, max_size=6))
            ops.append((kind, keys, [draw(VALUES) for _ in keys]))
        elif kind == "put":
            ops.append((kind, draw(KEYS), draw(st.none() | VALUES)))
        elif kind in ("get", "buffered"):
            ops.append((kind, draw(KEYS)))
        elif kind == "get_many":
            keys = draw(st.lists(KEYS, max_size=6))
            ordered = draw(st.booleans()) and keys == sorted(set(keys))
            ops.append((kind, keys, ordered))
        else:
            lo, hi = sorted(draw(st.lists(KEYS, min_size=2, max_size=2)))
            ops.append((kind, lo, draw(st.none() | st.just(hi)), draw(st.booleans())))
    return ops


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=10), operations(), st.none() | st.tuples(KEYS, KEYS))
def test_buffer_reads_its_writes_and_commits_them_in_order(
    stored: dict[bytes, bytes], ops: list[tuple[Any, ...]], cut: tuple[bytes, bytes] | None
) -> None:
    store = MemoryStore(busy_timeout=1.0)
    store.data.update(stored)
    store.lock.acquire(1.0)  # the session releases it when the buffer is flushed
    buffer = WriteBuffer(_CheckedSession(store))
    model: dict[bytes, bytes | None] = dict(stored)
    written: set[bytes] = set()

    def seen(lo: bytes, hi: bytes | None, reverse: bool) -> list[tuple[bytes, bytes]]:
        items = sorted((k, v) for k, v in model.items() if v is not None and k >= lo and (hi is None or k < hi))
        return items[::-1] if reverse else items

    for op in ops:
        kind = op[0]
        if kind in ("run", "many"):
            buffer.put_many(op[1], op[2], ordered=kind == "run")
            model.update(zip(op[1], op[2]))
            written.update(op[1])
        elif kind == "put":
            buffer.put(op[1], op[2])
            model[op[1]] = op[2]
            written.add(op[1])
        elif kind == "get":
            assert buffer.get(op[1]) == model.get(op[1])
        elif kind == "buffered":
            assert buffer.is_buffered(op[1]) == (op[1] in written)
        elif kind == "get_many":
            assert buffer.get_many(op[1], ordered=op[2]) == [model.get(k) for k in op[1]]
        else:
            _, lo, hi, reverse = op
            want = seen(lo, hi, reverse)
            if kind == "iterate":
                assert list(buffer.iterate(lo, hi, reverse)) == want
            elif kind == "keys":
                assert list(buffer.keys(lo, hi)) == [k for k, _ in seen(lo, hi, False)]
            elif kind == "values":
                assert list(buffer.values(lo, hi, reverse)) == [v for _, v in want]
            else:
                assert [v for chunk in buffer.value_chunks(lo, hi, reverse, 2) for v in chunk] == [v for _, v in want]
    if cut is not None:  # a range delete, never read after: applied at commit
        lo, hi = sorted(cut)
        buffer.delete_range(lo, hi + b"\x00")
        model = {k: v for k, v in model.items() if not lo <= k <= hi}
    buffer.flush()
    assert dict(store.data) == {k: v for k, v in model.items() if v is not None}


class _SpillingSession(_CheckedSession):
    """A checked session that takes sorted streams, so its buffer may spill."""

    def commits_sorted_stream(self) -> bool:
        return True


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["run", "many", "put"]), st.sets(KEYS, max_size=8), VALUES, st.booleans()),
        max_size=20,
    )
)
def test_a_spilling_buffer_commits_its_runs_writes_and_spills_as_written(
    ops: list[tuple[str, set[bytes], bytes, bool]],
) -> None:
    """A write-only transaction (a chunk of a load, a range write) that spills every few
    writes: its ordered runs go to disk as they are, beside the sorted buffered writes,
    and the commit's merged stream holds every key's last write."""
    store = MemoryStore(busy_timeout=1.0)
    store.lock.acquire(1.0)
    buffer = WriteBuffer(_SpillingSession(store))
    buffer.allow_spill(5)
    model: dict[bytes, bytes] = {}
    for kind, keys, value, spill in ops:
        if kind == "put":
            for key in keys:
                buffer.put(key, value)
        else:
            ordered = sorted(keys)
            buffer.put_many(ordered, [value] * len(ordered), ordered=kind == "run")
        model.update(dict.fromkeys(keys, value))
        if spill:
            buffer.spill_if_large()
    buffer.flush()
    assert dict(store.data) == model
