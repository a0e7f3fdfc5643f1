"""Opening a database: URL defaults, engine settings per dialect, creating/upgrading the schema.

SQLite is the zero-setup default. Several shard processes write to one file at once, so every
connection runs in WAL mode with a long busy timeout, and every transaction starts with
``BEGIN IMMEDIATE``: it takes the write lock up front and waits for it, instead of starting as a
reader and failing with "database is locked" when it later tries to write.
PostgreSQL goes through psycopg 3; creating the schema happens under an advisory lock so that
shards starting at the same moment do not race on CREATE TABLE.
"""
from __future__ import annotations

import os
import sqlite3
import time
import weakref
from pathlib import Path

from sqlalchemy import create_engine, event, insert, inspect, select, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.engine.url import URL
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from .errors import StoreError
from .migrations import MIGRATIONS
from .tables import SCHEMA_VERSION, metadata, schema_version

DEFAULT_URL = "sqlite:///.perfbot/results.db"
URL_ENV = "PERFBOT_DB_URL"
SQLITE_BUSY_TIMEOUT_MS = 60_000
# Any fixed 64-bit number: the key of the advisory lock that guards schema creation.
_PG_SCHEMA_LOCK = 0x70657266626F74


def display_url(url: URL | str) -> str:
    """The URL with any password masked, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def _configured_url() -> tuple[str | None, str]:
    """``db_url`` of ``[tool.perfbot]`` (the README documents it) and where it was found."""
    from bot.config import load_config

    config = load_config()
    return config.db_url, f"db_url in {config.source}"


def resolve_url(url: str | None) -> URL:
    """The URL to use: the argument, else $PERFBOT_DB_URL, else ``db_url`` of ``[tool.perfbot]``,
    else the SQLite file in the cwd."""
    raw, source = url, "--db"
    if not raw:
        raw, source = os.environ.get(URL_ENV), f"${URL_ENV}"
    if not raw:
        raw, source = _configured_url()
    raw = raw or DEFAULT_URL
    try:
        parsed = make_url(raw)
    except ArgumentError:
        # Say where the URL came from: a bad $PERFBOT_DB_URL is easy to forget about.
        raise StoreError(f"{source} is not a database URL: {raw.split('@')[-1]!r} (a SQLite file "
                         "is sqlite:///PATH, PostgreSQL postgresql://USER@HOST/DB)") from None
    # Plain postgresql:// would pick psycopg2, which we do not ship; psycopg 3 is the driver.
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Let us issue BEGIN ourselves (below) rather than the driver's implicit deferred BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _enter_wal(cursor)
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _enter_wal(cursor) -> None:
    """Switch the file to WAL mode (persistent: later connections find it set). Converting a
    fresh file needs an exclusive lock, and SQLite answers "database is locked" at once, without
    its busy handler, when several processes first open the same new file together; so wait and
    retry, for as long as the busy timeout allows."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def _forget_pool_after_fork(engine: Engine) -> None:
    # A forked child must not reuse the parent's open connections (both would talk over one
    # socket/file handle); dispose(close=False) gives the child a fresh pool.
    ref = weakref.ref(engine)

    def _child():
        live = ref()
        if live is not None:
            live.dispose(close=False)

    os.register_at_fork(after_in_child=_child)


def make_engine(url: URL, create: bool = True) -> Engine:
    kwargs: dict = {"future": True}
    if url.get_backend_name() == "sqlite":
        database = url.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            if not create and not Path(database).expanduser().is_file():
                raise StoreError(f"no results database at {database} (check --db; a command that "
                                 "records runs creates it)")
            folder = Path(database).expanduser().parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                # "File exists" would puzzle: say which part of the path is the problem.
                reason = ("a file is in the way of that folder"
                          if isinstance(exc, (FileExistsError, NotADirectoryError))
                          else exc.strerror or str(exc))
                raise StoreError(f"cannot create {folder} for the results database: {reason}") from None
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    else:
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(url, **kwargs)
    except (ArgumentError, ImportError, SQLAlchemyError) as exc:
        raise StoreError(f"cannot use database {display_url(url)}: {_reason(exc)}") from None
    if url.get_backend_name() == "sqlite":
        _configure_sqlite(engine)
    _forget_pool_after_fork(engine)
    return engine


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "orig", None) or exc
    return " ".join(str(inner).split())[:300] or type(inner).__name__


def ensure_schema(engine: Engine, create: bool = True) -> int:
    """Create the tables if missing (unless not ``create``), upgrade an older schema; return the
    schema version."""
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_SCHEMA_LOCK})
            return _ensure_schema_locked(conn, create)
    except StoreError:
        raise
    except SQLAlchemyError as exc:
        where = display_url(engine.url)
        raise StoreError(f"cannot open results database {where}: {_reason(exc)}") from None


def _ensure_schema_locked(conn: Connection, create: bool = True) -> int:
    existing = set(inspect(conn).get_table_names())
    ours = {table.name for table in metadata.sorted_tables} - {schema_version.name}
    has_version = schema_version.name in existing
    found = conn.execute(select(schema_version.c.version)).scalar() if has_version else None
    where = display_url(conn.engine.url)
    if found is None:
        # Tables of ours without a version stamp belong to some other program (or a damaged
        # store): adopting them would stamp a database we cannot read and fail on every query.
        clash = sorted(existing & ours)
        if clash:
            raise StoreError(f"{where} is not a perfbot results database (it has table(s) "
                             f"{', '.join(clash)} but no schema_version); give another --db")
        if not create:
            raise StoreError(f"{where} holds no perfbot results (check --db; a command that "
                             "records runs creates the tables)")
        metadata.create_all(conn)
        conn.execute(insert(schema_version).values(version=SCHEMA_VERSION))
        return SCHEMA_VERSION
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"the results database has schema version {found}, newer than this perfbot "
            f"understands ({SCHEMA_VERSION}); upgrade perfbot"
        )
    missing = sorted(ours - existing)
    if missing and found == SCHEMA_VERSION:
        raise StoreError(f"{where} is damaged: the perfbot table(s) {', '.join(missing)} are missing")
    while found < SCHEMA_VERSION:
        MIGRATIONS[found](conn)
        found += 1
        conn.execute(schema_version.update().values(version=found))
    return found
