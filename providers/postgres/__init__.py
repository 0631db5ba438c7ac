"""The PostgreSQL provider: ``postgresql+psycopg://user@host:port/db?schema=NAME``.

Every logical table is an ordinary PostgreSQL table with typed columns, a real
primary key and one btree index per secondary index, so other tools (``psql``,
BI tools, ``pg_dump``) read the same rows. Statements are SQLAlchemy Core on
psycopg 3; transactions run at SERIALIZABLE and are retried on conflicts.

Modules, each importing only those above it:

- ``errors``, ``url``, ``schema``: driver errors → :mod:`spi.errors`; URLs; spec → tables
- ``sql``: scans as SELECTs; ``arrow``: Arrow scans through ADBC
- ``statements``: the statements of one spec; ``session``: what a table needs from its transaction
- ``load``: bulk COPY; ``table``: :class:`PgTable` over a session
- ``database``: engines, caches and connections one provider shares
- ``transaction``: :class:`PgTransaction` (a session); ``admin``: DDL; ``single``: the auto-commit handle
- ``provider``: :class:`PostgresProvider`
"""

from __future__ import annotations

from providers.postgres.provider import PostgresProvider

__all__ = ["PostgresProvider"]
