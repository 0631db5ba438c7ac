"""Generated row builders: functions whose source names a table's columns only as
``c0, c1...``, closure variables bound to the real names when the function is made,
so no column name ever appears in generated source.

Generated because a dict display runs about twice as fast as ``dict(zip(...))``,
and a loop written out for a fixed number of columns saves a call per row; the
engine's row readers and the PostgreSQL provider's row builder use them.
"""

from __future__ import annotations

from collections.abc import Callable
from textwrap import indent
from typing import Any


def dict_display(n: int, value: Callable[[int], str]) -> str:
    """The source of the dict display ``{c0: value(0), c1: value(1), ...}`` of ``n`` columns."""
    return "{" + ", ".join(f"c{i}: {value(i)}" for i in range(n)) + "}"


def column_closure(n: int, body: str, namespace: dict[str, Any], result: str = "build") -> Callable[..., Any]:
    """``make(*columns)``: a function that defines the functions of ``body`` (source
    at the left margin, naming the ``n`` columns ``c0``...) in a closure over the
    column names and returns ``result`` (an expression over what ``body`` defines).
    ``namespace`` holds the other names ``body`` refers to."""
    params = ", ".join(f"c{i}" for i in range(n))
    exec(f"def make({params}):\n{indent(body, '    ')}    return {result}\n", namespace)
    make: Callable[..., Any] = namespace["make"]
    return make
