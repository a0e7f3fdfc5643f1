"""The results store (SQLAlchemy 2): runs, rows, samples and coverage reports.

    store = open_store()                      # sqlite:///.perfbot/results.db in the cwd
    store = open_store("postgresql://u@host/db")

The URL defaults to $PERFBOT_DB_URL, then to the SQLite file ``.perfbot/results.db``.
"""
from __future__ import annotations

from .engine import DEFAULT_URL, display_url, ensure_schema, make_engine, resolve_url
from .errors import StoreError
from .store import Store
from .tables import SCHEMA_VERSION

__all__ = ["open_store", "Store", "StoreError", "DEFAULT_URL", "SCHEMA_VERSION", "display_url"]


def open_store(url: str | None = None, create: bool = True) -> Store:
    """Open (creating or upgrading the schema if needed) the results database at ``url``. A
    command that only reads passes ``create=False``: a database that is not there is then an
    error (a mistyped --db) instead of a new empty one."""
    engine = make_engine(resolve_url(url), create)
    try:
        ensure_schema(engine, create)
    except BaseException:
        engine.dispose()
        raise
    return Store(engine)
