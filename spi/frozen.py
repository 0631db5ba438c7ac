"""Frozen tables (``admin.freeze``, the fencing step of a cut-over): how a table
object of a frozen table refuses every row write.

A provider keeps the flag with the table's spec in its catalog and hands it out as
``TableSpec.frozen``. :class:`~spi.table.TableBase` fences each table object made
for a frozen spec when it is made (:func:`fence`), so no write path of any provider
needs a check of its own and a table that is not frozen pays nothing: the public
writes and the write primitives the engine's loads and copies use raise
:class:`~spi.errors.FrozenTableError` before anything is written, while reads, and
the removal of expired rows (a sweep, a read or write that meets one), still work.
"""

from __future__ import annotations

from typing import Any, NoReturn

from spi.errors import FrozenTableError

WRITES = (
    "upsert",
    "insert",
    "replace",
    "update",
    "delete",
    "increment",
    "compare_and_swap",
    "update_range",
    "delete_range",
    "delete_every_row",
    "load",
    "_put",
    "_load_batch",
    "_load_kept",
)
"""What a fenced table refuses: every public row write, and the primitives that
write rows (``_remove`` is refused too, except for an expired row)."""


def fence(table: Any, name: str) -> None:
    """Make the table object ``table`` of the frozen table ``name`` refuse every row
    write with :class:`FrozenTableError` (see the module docs)."""

    def refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
        raise FrozenTableError(name)

    for attribute in WRITES:
        setattr(table, attribute, refuse)
    remove = table._remove

    def remove_expired(key: tuple[Any, ...], old: Any, *, expired: bool = False) -> None:
        if not expired:
            refuse()
        remove(key, old, expired=True)

    table._remove = remove_expired
