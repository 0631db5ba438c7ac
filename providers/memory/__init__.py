"""The in-memory provider: ``memory://``, a private store per connection.

Storage is a sorted map of encoded keys (``sortedcontainers.SortedDict``), so a
range scan costs O(log n + rows returned). Thread-safe within one process;
transactions are serializable by running one at a time.
"""

from __future__ import annotations

from providers.memory.provider import MemoryProvider

__all__ = ["MemoryProvider"]
