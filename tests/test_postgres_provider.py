"""PostgreSQL provider specifics: concurrency across processes, hostile input,
reading tables with psql, the catalog as normal tables, unreachable servers."""

from __future__ import annotations

import datetime as dt
import os
import random
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

import spi
from bench.common import TARGET_MISSED
from spi import col
from spi.errors import LimitExceededError, ProviderUnavailableError, SchemaError, TableNotFoundError, UrlError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTERS = spi.TableSpec("counters", [spi.Field("name", "string"), spi.Field("n", "long")], ["name"])
LOCKS = spi.TableSpec("locks", [spi.Field("name", "string"), spi.Field("owner", "string")], ["name"])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": ROOT}


HOSTILE_NAMES = ['a"b', "a;drop", "x--y", "t'1", "naïve", "日本", "a b", 'x"; DROP TABLE kv_catalog; --', "kv_catalog"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_identifiers_rejected(pg_factory: Callable[..., Any], name: str) -> None:
    with pytest.raises(SchemaError):
        spi.TableSpec(name, [spi.Field("k", "long")], ["k"])
    with pytest.raises(SchemaError):
        spi.TableSpec("t", [spi.Field(name, "long")], [name])
    p = pg_factory()
    assert not p.admin.exists(name)
    with pytest.raises(spi.errors.TableNotFoundError):
        p.table(name).read((1,))
    with pytest.raises(spi.errors.InvalidFieldError):
        p.admin.create(COUNTERS)
        list(p.table("counters").scan(where=col(name) == 1))
    assert p.admin.list_tables() == ["counters"]


@pytest.mark.parametrize("schema", ['a"b', "a;drop", "x--y", "naïve", "pg_catalog", "1x", "a b", "x" * 64])
def test_hostile_schema_rejected(pg_server: Any, schema: str) -> None:
    with pytest.raises(UrlError):
        spi.connect(f"{pg_server.url}?schema={quote(schema)}")


def test_a_key_over_btrees_entry_limit_is_a_limit_error(pg_factory: Callable[..., Any]) -> None:
    """Three key strings of 1 KiB each pass the SPI's limits, but their index entry (3 kB)
    is over btree's 2704 bytes: the server's program_limit_exceeded (SQLSTATE 54000)
    becomes LimitExceededError, and nothing is written."""
    p = pg_factory()
    fields = [spi.Field("a", "string"), spi.Field("b", "string"), spi.Field("c", "string"), spi.Field("v", "long")]
    p.admin.create(spi.TableSpec("wide", fields, ["a", "b", "c"]))
    t = p.table("wide")
    rnd = random.Random(54000)
    # Random text: PostgreSQL compresses index entries, and a repeated character would fit.
    big = {c: "".join(rnd.choices(string.ascii_letters + string.digits, k=1024)) for c in "abc"}
    with pytest.raises(LimitExceededError) as e:
        t.upsert({**big, "v": 1})
    message = str(e.value)
    assert "\n" not in message and "HINT" not in message and "DETAIL" not in message
    assert message.startswith("value too large for PostgreSQL on ") and "exceeds btree" in message
    with pytest.raises(LimitExceededError):  # the same limit through COPY
        t.load([{**big, "v": 2}])
    with pytest.raises(LimitExceededError), p.transaction() as tx:
        tx.table("wide").upsert({"a": "small", "b": "", "c": "", "v": 3})
        tx.table("wide").insert({**big, "v": 4})
    assert t.count() == 0 and t.read(tuple(big.values())) is None


def test_scan_arrow_stopped_early_leaves_the_connection_usable(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    p.admin.create(spi.TableSpec("many", [spi.Field("k", "long"), spi.Field("s", "string")], ["k"]))
    t = p.table("many")
    t.load({"k": i, "s": f"v{i}"} for i in range(5000))
    for _ in range(3):  # more times than the pool has connections
        batches = t.scan_arrow(batch_size=10)
        assert next(batches).num_rows == 10
        batches.close()  # closes the scan's own connection, which ends the query
    t.upsert({"k": -1, "s": "x"})
    assert t.count() == 5001 and sum(b.num_rows for b in t.scan_arrow()) == 5001
    with p.transaction() as tx:  # inside a transaction it sees the transaction's writes
        tx.table("many").delete((-1,))
        assert sum(b.num_rows for b in tx.table("many").scan_arrow()) == 5000


def test_scan_arrow_of_a_table_dropped_before_reading(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    p.admin.create(spi.TableSpec("gone", [spi.Field("k", "long")], ["k"]))
    p.table("gone").upsert({"k": 1})
    batches = p.table("gone").scan_arrow()  # checked and planned now, read on the first next()
    p.admin.drop("gone")
    with pytest.raises(TableNotFoundError) as e:
        next(batches)
    assert "\n" not in str(e.value) and "SELECT" not in str(e.value)


def test_arrow_scans_connect_with_the_urls_settings(pg_server: Any, pg_factory: Callable[..., Any]) -> None:
    import pyarrow as pa

    from providers.postgres.arrow import adbc_batches, conninfo
    from providers.postgres.url import parse_url

    p = pg_factory(application_name="mine")
    p.admin.create(spi.TableSpec("t", [spi.Field("k", "long")], ["k"]))
    p.table("t").upsert({"k": 7})
    assert [b.to_pylist() for b in p.table("t").scan_arrow()] == [[{"k": 7}]]
    assert "application_name='mine'" in p.arrow_conninfo
    # A space, a quote and a backslash in a password survive libpq's quoting (the
    # test server trusts local connections, so any password logs in).
    odd = "p a's\\w"
    info = conninfo(parse_url(pg_server.url.replace("postgres@", f"postgres:{quote(odd, safe='')}@")))
    query = "SELECT current_setting('transaction_read_only') AS ro"
    batches = adbc_batches(info, query, pa.schema([("ro", pa.string())]), 10, "test", odd)
    assert [r for b in batches for r in b.to_pylist()] == [{"ro": "on"}]


def test_arrow_scans_read_the_type_catalogue_once_per_process(pg_factory: Callable[..., Any]) -> None:
    """The ADBC driver reads pg_type and all of pg_attribute when its database object is
    made: one per connection string per process, shared by every scan's connection."""
    from providers.postgres import arrow

    p, q = pg_factory(), pg_factory()  # two providers, two schemas, one server
    for provider in (p, q):
        provider.admin.create(spi.TableSpec("t", [spi.Field("k", "long")], ["k"]))
        provider.table("t").upsert({"k": 1})
    assert sum(b.num_rows for b in p.table("t").scan_arrow()) == 1
    database = arrow._databases[p.arrow_conninfo]
    assert q.arrow_conninfo == p.arrow_conninfo
    assert sum(b.num_rows for b in q.table("t").scan_arrow()) == 1
    assert arrow._databases[p.arrow_conninfo] is database
    # A table made after the catalogue was read (a new row type in pg_type) reads right.
    p.admin.create(
        spi.TableSpec("later", [spi.Field("k", "long"), spi.Field("at", "timestamp"), spi.Field("b", "bytes")], ["k"])
    )
    at = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    p.table("later").upsert({"k": 2, "at": at, "b": b"x"})
    assert [r for b in p.table("later").scan_arrow() for r in b.to_pylist()] == [{"k": 2, "at": at, "b": b"x"}]


def test_arrow_scan_failures_are_one_line_without_the_password() -> None:
    import adbc_driver_manager

    from providers.postgres.arrow import _error

    down = adbc_driver_manager.OperationalError(
        "IO: [libpq] Failed to connect: password s3cret rejected\n  more",
        status_code=adbc_driver_manager.AdbcStatusCode.IO,
    )
    error = _error(down, "postgresql+psycopg://u:***@h/db", "s3cret")
    assert isinstance(error, ProviderUnavailableError)
    assert "s3cret" not in str(error) and "\n" not in str(error)


SPLIT_KEYS: dict[str, Callable[[int], Any]] = {
    "long": lambda i: i * 7 - 5000,
    "string": lambda i: f"ключ-{i:05d}",
    "timestamp": lambda i: dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
}


@pytest.mark.parametrize("first", sorted(SPLIT_KEYS))
def test_split_from_fresh_statistics(pg_server: Any, pg_factory: Callable[..., Any], first: str) -> None:
    import psycopg
    from psycopg import sql

    p = pg_factory()
    p.admin.create(spi.TableSpec("big", [spi.Field("a", first), spi.Field("b", "int")], ["a", "b"]))
    t = p.table("big")
    t.load({"a": SPLIT_KEYS[first](i), "b": b} for i in range(3000) for b in range(2))
    everything = [(r["a"], r["b"]) for r in t.scan()]

    def statistics_split(n: int) -> list[spi.Range] | None:
        with p.transaction() as tx:
            return tx.table("big")._split_by_statistics(n)  # type: ignore[attr-defined, no-any-return]

    assert statistics_split(2) is None  # never analyzed: split reads the keys
    assert len(t.split(2)[1].start) == 2
    schema = p.url.split("schema=")[1].split("&")[0]
    table = sql.Identifier(schema, "big")
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(table))
    assert statistics_split(6) is None  # too few buckets for 6 ranges of 5%
    ranges = t.split(4)
    assert ranges == statistics_split(4) and [len(r.start or ()) for r in ranges] == [0, 1, 1, 1]
    parts = [[(r["a"], r["b"]) for r in t.scan(rng)] for rng in ranges]
    assert [k for part in parts for k in part] == everything
    assert all(abs(len(part) - 1500) <= 150 for part in parts), [len(part) for part in parts]
    with psycopg.connect(pg_server.dsn) as conn:  # change 10% of the rows behind kvctl's back
        conn.execute(
            sql.SQL("DELETE FROM {} WHERE b = 0 AND a IN (SELECT a FROM {} ORDER BY a LIMIT 600)").format(table, table)
        )
        conn.execute("SELECT pg_stat_force_next_flush()")
    assert statistics_split(4) is None and len(t.split(4)[1].start) == 2  # stale: exact again


def test_a_role_that_may_only_read(pg_server: Any, pg_factory: Callable[..., Any]) -> None:
    import psycopg
    from psycopg import sql

    p = pg_factory()
    p.admin.create(spi.TableSpec("t", [spi.Field("k", "long"), spi.Field("s", "string")], ["k"]))
    p.table("t").load({"k": i, "s": f"v{i}"} for i in range(100))
    schema = sql.Identifier(p.url.split("schema=")[1].split("&")[0])
    role = sql.Identifier("kvctl_reader")
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(role))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, role))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(schema, role))
    try:
        with spi.connect(p.url.replace("://postgres@", "://kvctl_reader@")) as reader:
            t = reader.table("t")
            assert t.count() == 100 and t.read((5,))["s"] == "v5" and len(t.split(2)) == 2  # type: ignore[index]
            assert sum(b.num_rows for b in t.scan_arrow()) == 100
            with pytest.raises(spi.KvError) as e:
                t.upsert({"k": 1, "s": "x"})
            assert "permission denied" in str(e.value) and "\n" not in str(e.value)
    finally:
        with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(role))
            conn.execute(sql.SQL("DROP ROLE {}").format(role))
    assert p.table("t").read((1,))["s"] == "v1"  # type: ignore[index]


def test_psql_reads_the_same_rows(pg_server: Any, pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    spec = spi.TableSpec(
        "readable",
        [
            spi.Field("region", "string"),
            spi.Field("id", "long"),
            spi.Field("qty", "int"),
            spi.Field("price", "double"),
            spi.Field("ok", "bool"),
            spi.Field("raw", "bytes"),
            spi.Field("at", "timestamp"),
        ],
        ["region", "id"],
        ["qty"],
    )
    p.admin.create(spec)
    t = p.table("readable")
    at = dt.datetime(2024, 5, 1, 12, 30, 1, 250000, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    rows = [
        {"region": "eu", "id": 2, "qty": 5, "price": 1.5, "ok": True, "raw": b"\x00\xff", "at": at},
        {"region": "eu", "id": -1, "qty": None, "price": None, "ok": False, "raw": None, "at": None},
        {"region": "ap", "id": 7, "qty": -3, "price": 1e300, "ok": None, "raw": b"", "at": at},
    ]
    t.load(rows[:2])
    t.upsert(rows[2])
    schema = p.url.split("schema=")[1].split("&")[0]
    query = f'SELECT region, id, qty, price, ok, raw, "at", kv_version FROM "{schema}".readable ORDER BY region, id'
    out = subprocess.run(
        [
            pg_server.bin("psql"),
            "-X",
            "-A",
            "-t",
            "-F",
            "|",
            "-d",
            pg_server.dsn,
            "-c",
            "SET timezone = 'UTC'",
            "-c",
            query,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    out = [line for line in out if line != "SET"]

    def text(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, bool):
            return "t" if v else "f"
        if isinstance(v, bytes):
            return "\\x" + v.hex()
        if isinstance(v, dt.datetime):
            return v.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0") + "+00"
        return str(v)

    expected = ["|".join(text(r[c]) for c in spec.columns) + f"|{r.version}" for r in t.scan()]
    assert out == expected
    assert len(out) == 3


def test_catalog_and_tables_are_plain_postgres(pg_server: Any, pg_factory: Callable[..., Any]) -> None:
    import psycopg

    p = pg_factory()
    spec = spi.TableSpec(
        "typed",
        [
            spi.Field("k", "long"),
            spi.Field("i", "int"),
            spi.Field("f", "float"),
            spi.Field("d", "double"),
            spi.Field("s", "string"),
            spi.Field("b", "bytes"),
            spi.Field("flag", "bool"),
            spi.Field("ts", "timestamp"),
        ],
        ["k"],
        ["s"],
    )
    p.admin.create(spec)
    schema = p.url.split("schema=")[1].split("&")[0]
    with psycopg.connect(pg_server.dsn) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", (schema,)
            )
        ]
        assert tables == ["kv_catalog", "typed"]
        types = dict(
            conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = %s AND table_name = 'typed'",
                (schema,),
            ).fetchall()
        )
        assert types == {
            "k": "bigint",
            "i": "integer",
            "f": "real",
            "d": "double precision",
            "s": "text",
            "b": "bytea",
            "flag": "boolean",
            "ts": "timestamp with time zone",
            "kv_version": "bigint",
            "kv_expires": "timestamp with time zone",
        }
        collation = conn.execute(
            "SELECT collation_name FROM information_schema.columns"
            " WHERE table_schema = %s AND table_name = 'typed' AND column_name = 's'",
            (schema,),
        ).fetchone()
        assert collation == ("C",)
        key = conn.execute(
            "SELECT kcu.column_name FROM information_schema.table_constraints tc"
            " JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name)"
            " WHERE tc.table_schema = %s AND tc.table_name = 'typed' AND tc.constraint_type = 'PRIMARY KEY'",
            (schema,),
        ).fetchall()
        assert key == [("k",)]
        indexes = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s", (schema,))]
        assert any("USING btree (s NULLS FIRST, k)" in d for d in indexes)
        spec_json = conn.execute(f'SELECT spec FROM "{schema}".kv_catalog WHERE name = %s', ("typed",)).fetchone()
        assert spi.TableSpec.from_dict(spec_json[0]) == spec
    assert p.admin.verify("typed") == []


def test_explain_shows_sql_and_plan(pg_factory: Callable[..., Any]) -> None:
    p = pg_factory()
    p.admin.create(LOCKS)
    text = p.table("locks").explain(where=col("owner") == "x'; --")
    assert "SELECT" in text and "owner" in text and "Scan" in text and "x'; --" in text


@pytest.mark.timing
def test_server_down_is_unavailable_quickly() -> None:
    from pg_server import free_port

    url = f"postgresql+psycopg://someone:topsecretpw@127.0.0.1:{free_port()}/db"
    p = spi.connect(url)
    assert "topsecretpw" not in repr(p) and "topsecretpw" not in p.url
    start = time.monotonic()
    with pytest.raises(ProviderUnavailableError) as e:
        p.admin.list_tables()
    assert time.monotonic() - start < 5
    assert "topsecretpw" not in str(e.value) and "***" in str(e.value)
    with pytest.raises(ProviderUnavailableError):
        p.table("t").read((1,))
    p.close()


@pytest.mark.timing
def test_unroutable_host_times_out_within_five_seconds() -> None:
    p = spi.connect("postgresql+psycopg://u:hidden-pw@10.255.255.1:5432/db")
    start = time.monotonic()
    with pytest.raises(ProviderUnavailableError) as e:
        p.admin.list_tables()
    assert time.monotonic() - start < 5.5
    assert "hidden-pw" not in str(e.value)
    p.close()


@pytest.mark.timing
def test_wrong_password_is_unavailable_without_the_password(pg_server: Any) -> None:
    from conftest import need

    need("a password-protected test role", pg_server.password_url is not None, "external server")
    good = spi.connect(
        pg_server.password_url + "&schema=pwcheck"
        if "?" in pg_server.password_url
        else pg_server.password_url + "?schema=pwcheck"
    )
    assert good.admin.list_tables() == []
    good.close()
    bad_password = "Wr0ng;pass'--"
    bad_url = pg_server.password_url.rsplit("@", 1)[1]
    url = f"postgresql+psycopg://kvctl_pw:{quote(bad_password, safe='')}@{bad_url}"
    p = spi.connect(url)
    start = time.monotonic()
    with pytest.raises(ProviderUnavailableError) as e:
        p.admin.list_tables()
    assert time.monotonic() - start < 5
    assert bad_password not in str(e.value) and quote(bad_password, safe="") not in str(e.value)
    assert "password" in str(e.value)  # "password authentication failed", not the password
    p.close()


def test_url_forms(pg_server: Any) -> None:
    base = pg_server.url.split("://", 1)[1]
    for scheme in ("postgres", "postgresql", "postgresql+psycopg"):
        p = spi.connect(f"{scheme}://{base}?schema=urlforms")
        assert type(p).__name__ == "PostgresProvider" and p.schema == "urlforms"
        p.close()
    p = spi.connect(f"postgresql://{base}")
    assert p.schema == "kvctl"
    p.close()
    with pytest.raises(UrlError):
        spi.connect("postgresql+psycopg://u:pw@host:notaport/db")
    with pytest.raises(UrlError):
        spi.connect(f"postgresql://{base}?schema=a&pool_size=x")


def test_reads_notice_schema_changes_from_another_client(pg_factory: Callable[..., Any]) -> None:
    first = pg_factory()
    second = spi.connect(first.url)  # another client: its own pool and caches
    try:
        first.admin.create(COUNTERS)
        first.table("counters").upsert({"name": "a", "n": 1})
        assert dict(second.table("counters").read(("a",))) == {"name": "a", "n": 1}
        wider = spi.TableSpec("counters", [*COUNTERS.fields, spi.Field("extra", "string")], ["name"])
        first.admin.create_or_update(wider)
        first.table("counters").update(("a",), {"extra": "x"})
        assert dict(second.table("counters").read(("a",))) == {"name": "a", "n": 1, "extra": "x"}
        first.admin.drop("counters")
        with pytest.raises(spi.errors.TableNotFoundError):
            second.table("counters").read(("a",))
        first.admin.create(spi.TableSpec("counters", [spi.Field("name", "string"), spi.Field("m", "int")], ["name"]))
        first.table("counters").upsert({"name": "a", "m": 2})
        assert dict(second.table("counters").read(("a",))) == {"name": "a", "m": 2}
    finally:
        second.close()


def test_auto_commit_reads_are_one_statement_on_a_kept_cursor(pg_factory: Callable[..., Any]) -> None:
    """The single-statement read answers by itself (no fallback to a transaction on a
    new connection): its compiled SQL must bind nothing but the key and the name."""
    from providers.postgres.autocommit import _OneStatement

    p = pg_factory()
    p.admin.create(COUNTERS)
    table = p.table("counters")
    table.upsert({"name": "a", "n": 1}, ttl=3600)
    assert table.read(("a",)) is not None  # the table's read statement is learned here
    db = p._db
    sql, statement = db.cached_read("counters")
    kept = db.take_autocommit()
    db.give_back(kept)
    session = _OneStatement(db, statement)
    stored = session.fetch_row(sql, ("a",))
    assert stored is not None and stored.values == {"name": "a", "n": 1} and stored.version == 1
    assert session.server_micros() < stored.expires
    assert session.fetch_row(sql, ("b",)) is None
    for _ in range(3):
        assert dict(table.read(("a",))) == {"name": "a", "n": 1}
    again = db.take_autocommit()
    assert again == kept  # kept, not made again
    db.give_back(again)


def test_auto_commit_reads_from_many_threads_keep_few_connections(pg_factory: Callable[..., Any]) -> None:
    """Threads that each read once (the dashboard's workers) share the kept
    connections: more threads than the pool holds never wait for a connection."""
    p = pg_factory()
    p.admin.create(COUNTERS)
    table = p.table("counters")
    table.upsert({"name": "a", "n": 1})
    slowest = 0.0

    def read() -> None:
        nonlocal slowest
        start = time.monotonic()
        assert dict(table.read(("a",))) == {"name": "a", "n": 1}
        slowest = max(slowest, time.monotonic() - start)

    for _ in range(40):  # more than pool_size + max_overflow (25), one after another
        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
        # One connection per thread, kept until the provider closed, made the 26th
        # thread wait 30 s for the pool.
        assert len(p._db._held) == 1
    assert slowest < 5.0


def test_bench_smoke(pg_server: Any) -> None:
    out = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "bench", "postgres.py"),
            "--rows",
            "3000",
            "--reads",
            "300",
            "--url",
            pg_server.url,
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    # TARGET_MISSED: a target missed at this tiny size (no timing is asserted); 1 (a crash) or 2 fails
    assert out.returncode in (0, TARGET_MISSED), f"exit {out.returncode}: {out.stderr}"
    for name in ("load", "point read", "full scan"):
        assert any(line.startswith(name) and "x" in line for line in out.stdout.splitlines()), out.stdout


def test_create_false_needs_an_existing_schema(pg_server: Any, pg_factory: Callable[..., Any]) -> None:
    import psycopg

    sep = "&" if "?" in pg_server.url else "?"
    url = f"{pg_server.url}{sep}schema=kvctl_never_made"
    with spi.connect(url, create=False) as p:  # connects lazily: the check is on first use
        with pytest.raises(UrlError, match=r"PostgreSQL schema 'kvctl_never_made' at .* holds no kvctl tables") as e:
            p.admin.get_spec("t")
        assert "nothing was created" in str(e.value) and "\n" not in str(e.value)
        with pytest.raises(UrlError):
            p.table("t").read((1,))
        assert p.admin.list_tables() == []  # an empty store: no tables, nothing created
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'kvctl_never_made'").fetchone()
    assert row == (0,)
    made = pg_factory()
    made.admin.create(COUNTERS)
    with spi.connect(made.url, create=False) as p:
        assert p.admin.list_tables() == ["counters"]


def test_tables_made_before_expiry_get_its_column_when_the_schema_is_opened(
    pg_factory: Callable[..., Any], pg_server: Any
) -> None:
    import psycopg

    p = pg_factory()
    p.admin.create(spi.TableSpec("old", [("k", "long"), ("v", "string")], ["k"]))
    p.table("old").upsert({"k": 1, "v": "a"})
    schema = p.url.split("schema=")[1].split("&")[0]
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:  # as an earlier kvctl left it
        conn.execute(f'ALTER TABLE "{schema}"."old" DROP COLUMN kv_expires')
    url = f"{pg_server.url}{'&' if '?' in pg_server.url else '?'}schema={schema}"
    with spi.connect(url) as again:
        t = again.table("old")
        assert t.read((1,))["v"] == "a"  # type: ignore[index]
        t.upsert({"k": 2, "v": "b"}, ttl=3600)
        assert t.read((2,)).expires_at is not None  # type: ignore[union-attr]
        assert again.admin.verify("old") == []
