"""The PostgreSQL provider: ``postgresql+psycopg://user@host:port/db?schema=NAME``.

Every logical table is an ordinary PostgreSQL table with typed columns, a real
primary key and one btree index per secondary index, so other tools (``psql``,
BI tools, ``pg_dump``) read the same rows. Statements are SQLAlchemy Core on
psycopg 3; transactions run at SERIALIZABLE and are retried on conflicts.
"""

from __future__ import annotations

from providers.postgres.provider import PostgresProvider

__all__ = ["PostgresProvider"]
