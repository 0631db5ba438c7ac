"""Applying migrations and reporting their status, through the SPI only."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import spi
from migrations.model import Migration, MigrationStateError
from spi.errors import KvError, RowExistsError

STATE_TABLE = "kvctl_migrations"
STATE_SPEC = spi.TableSpec(
    STATE_TABLE,
    [
        spi.Field("version", "long"),
        spi.Field("description", "string"),
        spi.Field("checksum", "string"),
        spi.Field("state", "string"),
        spi.Field("applied_at", "timestamp"),
    ],
    primary_key=["version"],
)


@dataclass(frozen=True)
class MigrationStatus:
    """One migration and what the store knows of it (state: pending, running, applied)."""

    version: int
    description: str
    state: str
    applied_at: dt.datetime | None
    modified: bool


def _records(provider: Any) -> dict[int, spi.Row]:
    if not provider.admin.exists(STATE_TABLE):
        return {}
    return {row["version"]: row for row in provider.table(STATE_TABLE).scan()}


def status(provider: Any, migrations: Sequence[Migration]) -> list[MigrationStatus]:
    """Every migration with its state; ``modified`` when an applied file changed since."""
    records = _records(provider)
    out = []
    for m in migrations:
        rec = records.get(m.version)
        state = "pending" if rec is None else rec["state"]
        out.append(
            MigrationStatus(
                m.version,
                m.description,
                state,
                None if rec is None else rec["applied_at"],
                rec is not None and rec["checksum"] != m.checksum,
            )
        )
    return out


def migrate(provider: Any, migrations: Sequence[Migration], *, target: int | None = None) -> list[int]:
    """Apply pending migrations up to ``target`` (all when None), in order; returns
    the versions applied.

    A migration is claimed by inserting its record (so two processes never apply it
    twice), its steps run, and the record is marked applied. A failing step stops
    the run and removes the claim; its steps are safe to repeat, so fix and re-run.
    An applied migration whose file changed since is refused.
    """
    records = _records(provider)
    for m in migrations:
        rec = records.get(m.version)
        if rec is not None and rec["checksum"] != m.checksum:
            raise MigrationStateError(
                f"migration {m.version} ({m.source}) changed after it was applied; "
                "add a new migration instead of editing an applied one"
            )
    provider.admin.create_or_update(STATE_SPEC)
    log = provider.table(STATE_TABLE)
    applied: list[int] = []
    for m in migrations:
        if (target is not None and m.version > target) or m.version in records:
            if m.version in records and records[m.version]["state"] == "running":
                raise MigrationStateError(
                    f"migration {m.version} is marked running: another process is applying it, or one "
                    f"died mid-way (if so, delete its record: kvctl delete {STATE_TABLE} version={m.version})"
                )
            continue
        try:
            log.insert({"version": m.version, "description": m.description, "checksum": m.checksum, "state": "running"})
        except RowExistsError:
            raise MigrationStateError(f"migration {m.version} is being applied by another process") from None
        for i, step in enumerate(m.steps):
            try:
                step.apply(provider)
            except BaseException as exc:
                log.delete((m.version,))
                if isinstance(exc, KvError):
                    exc.args = (f"migration {m.version} step {i} ({step.describe()}) failed: {exc}",)
                raise
        log.update((m.version,), {"state": "applied", "applied_at": dt.datetime.now(dt.UTC)})
        applied.append(m.version)
    return applied
