"""Schema upgrades: ``MIGRATIONS[v](conn)`` turns a version-v database into version v+1.

Version 1 is the first schema, so there is nothing to upgrade yet. A future incompatible change
adds its step here and bumps ``tables.SCHEMA_VERSION``; ``engine.ensure_schema`` runs the steps
in order inside the schema lock.
"""
from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Connection

MIGRATIONS: dict[int, Callable[[Connection], None]] = {}
