"""Versioned table-spec migrations, applied through the SPI.

A migrations folder holds files named ``NNNN_description.json`` (declarative) or
``NNNN_description.py`` (code). Each is applied once, in version order, and
recorded with its checksum in the table ``kvctl_migrations`` of the same store::

    from migrations import load_directory, migrate
    applied = migrate(spi.connect(url), load_directory("db/migrations"))
"""

from __future__ import annotations

import logging

from migrations.loader import load_directory
from migrations.model import Migration, MigrationFileError, MigrationStateError, Step
from migrations.runner import STATE_TABLE, MigrationStatus, migrate, status

__all__ = [
    "STATE_TABLE",
    "Migration",
    "MigrationFileError",
    "MigrationStateError",
    "MigrationStatus",
    "Step",
    "load_directory",
    "migrate",
    "status",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())  # records go nowhere unless configured
