"""Consistency check of one table's stored rows and index entries (``admin.verify``)."""

from __future__ import annotations

from spi.codec import decode_key, decode_nullable, prefix_successor
from spi.kv.scan import Scanner
from spi.kv.transaction import KvTransaction
from spi.textvalues import key_words, to_word

PROBLEM_LIMIT = 100
"""Stop after this many problems: a damaged table would otherwise report every row."""


def verify_table(tx: KvTransaction, name: str) -> list[str]:
    """Check every row decodes and every index entry matches its row (both ways)."""
    problems: list[str] = []
    lay = tx.layout(name)
    spec = lay.spec
    n = len(lay.row_prefix)
    rows = 0
    for k, raw in tx.iterate(lay.row_prefix, prefix_successor(lay.row_prefix), False):
        rows += 1
        try:
            key, end = decode_key(lay.key_types, k, n)
            if end != len(k):
                raise ValueError("trailing bytes after the key")
            row = lay.decode_row(raw)
            if tuple(row.values[c] for c in spec.primary_key) != key:
                raise ValueError("stored key columns differ from the key")
        except Exception as exc:
            problems.append(f"row {k[n:].hex()}: cannot decode ({exc})")
            continue
        for column in spec.indexes:
            if tx.get(lay.index_key(column, row.values[column], k[n:])) is None:
                problems.append(
                    f"row {key_words(spec, key)}: index {column!r} has no entry for value {to_word(row.values[column])}"
                )
        if row.expires is not None and tx.get(lay.expiry_key(row.expires, k[n:])) is None:
            problems.append(f"row {key_words(spec, key)}: its expiry has no entry (a sweep would miss it)")
        if len(problems) >= PROBLEM_LIMIT:
            return problems
    counted = Scanner(tx, lay).stored_count()
    if counted is not None and counted != rows:
        problems.append(f"the row counter says {counted} rows, the table holds {rows}")
    start = len(lay.expiry_prefix)
    for k, _ in tx.iterate(lay.expiry_prefix, prefix_successor(lay.expiry_prefix), False):
        stored = tx.get(lay.row_prefix + k[start + 8 :])
        if stored is None or lay.decode_row(stored).expires != int.from_bytes(k[start : start + 8], "big"):
            problems.append(f"expiry entry {k[start:].hex()} does not match a row")
        if len(problems) >= PROBLEM_LIMIT:
            return problems
    for column in spec.indexes:
        prefix = lay.index_prefix(column)
        ftype = spec.type_of(column)
        for k, _ in tx.iterate(prefix, prefix_successor(prefix), False):
            try:
                value, pos = decode_nullable(ftype, k, len(prefix))
                stored = tx.get(lay.row_prefix + k[pos:])
                if stored is None:
                    problems.append(f"index {column!r}: entry for value {to_word(value)} points to a missing row")
                elif lay.decode_row(stored).values[column] != value:
                    problems.append(f"index {column!r}: entry for value {to_word(value)} does not match its row")
            except Exception as exc:
                problems.append(f"index {column!r}: undecodable entry {k.hex()} ({exc})")
            if len(problems) >= PROBLEM_LIMIT:
                return problems
    return problems
