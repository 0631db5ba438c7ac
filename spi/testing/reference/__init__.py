"""A reference model of the SPI for differential tests (:class:`ReferenceProvider`).

It shares no code with the engine beyond spec, key-shape and value validation: its
storage (a list of rows per table), order, filter evaluation, LIKE matching,
versions, conditions, pagination and bulk-load batching are written here, plainly,
from SPI.md, so that a provider built on the engine is checked against something
that is not the engine.
"""

from spi.testing.reference.provider import ReferenceProvider

__all__ = ["ReferenceProvider"]
