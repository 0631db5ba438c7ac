"""JSON text a user hands kvctl (a row, a ``txn`` document, change lines, a spec, an
input file), decoded by Python's :mod:`json` with every refusal a
:class:`json.JSONDecodeError`.

Python's decoder refuses two things otherwise: arrays or objects nested deeper than
its recursion limit (a ``RecursionError``) and an integer of more than
:func:`sys.get_int_max_str_digits` digits (a plain ``ValueError``). Rows hold plain
values, so neither is ever a row: both are bad input, reported like bad JSON
(exit 2) with the character where they start.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

TOO_DEEP = "arrays or objects nested too deeply"
"""The message of JSON nested deeper than the decoder goes."""

_DIGITS = re.compile(r"[0-9]+")


def loads(text: str) -> Any:
    """``json.loads(text)``, raising :class:`json.JSONDecodeError` for every refusal."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, text, _first_bracket(text)) from None
    except ValueError:  # an integer too long to convert
        raise too_long(text, 0) from None


def too_long(text: str, start: int) -> json.JSONDecodeError:
    """The error of an integer in ``text`` (from ``start``) too long to convert, at it."""
    limit = sys.get_int_max_str_digits()
    at = next((m.start() for m in _DIGITS.finditer(text, start) if len(m.group()) > limit), start)
    return json.JSONDecodeError(f"a number of more than {limit} digits", text, at)


def _first_bracket(text: str) -> int:
    return min((i for i in (text.find("["), text.find("{")) if i >= 0), default=0)
