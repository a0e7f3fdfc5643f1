"""The store's tables (SQLAlchemy Core), version ``SCHEMA_VERSION``.

runs ──< rows ──< samples; coverage_reports stands alone (keyed by commit). Rows keep the
results-document fields as columns so that history queries stay in SQL; fields a newer runner
adds ride along in ``extra`` (JSON) and come back out unchanged. Any incompatible change bumps
SCHEMA_VERSION and adds a step to ``migrations.MIGRATIONS``.
"""
from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

SCHEMA_VERSION = 1

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
)

runs = Table(
    "runs",
    metadata,
    # An integer key gives inserts a total order (ties of "started" break by it) and keeps
    # foreign keys small; "id" is the public, printable run id.
    Column("pk", Integer, primary_key=True, autoincrement=True),
    Column("id", String(200), nullable=False, unique=True),
    Column("commit", String(64), nullable=False),
    Column("branch", String(255)),
    Column("target", String(16), nullable=False),
    Column("suite", String(200)),
    Column("shard", String(32)),
    Column("started", String(64), nullable=False),  # as written in the document
    Column("started_utc", DateTime, nullable=False),  # naive UTC, for ordering across zones
    Column("ended", String(64)),
    Column("machine", JSON),
    Column("versions", JSON),
    Column("extra", JSON),
    # Set when this shard was merged into another run: history and "latest" skip it then.
    Column("merged_into", String(200)),
    Index("ix_runs_commit", "commit"),
    Index("ix_runs_branch_target", "branch", "target", "started_utc"),
)

rows = Table(
    "rows",
    metadata,
    Column("pk", Integer, primary_key=True, autoincrement=True),
    Column("run_pk", Integer, ForeignKey("runs.pk", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),  # order within the run (the suite's order)
    Column("name", String(200), nullable=False),
    Column("batch", Integer, nullable=False),
    Column("mode", String(8), nullable=False),
    Column("status", String(8), nullable=False),
    Column("error", Text),
    Column("rate", Float),
    Column("compile_s", Float),
    Column("peak_mem_bytes", BigInteger),
    Column("accuracy", JSON),
    Column("extra", JSON),
    UniqueConstraint("run_pk", "name", "batch", "mode", name="uq_rows_run_key"),
    Index("ix_rows_key", "name", "batch", "mode"),
)

samples = Table(
    "samples",
    metadata,
    Column("row_pk", Integer, ForeignKey("rows.pk", ondelete="CASCADE"), primary_key=True),
    Column("idx", Integer, primary_key=True, autoincrement=False),
    Column("value", Float, nullable=False),
)

coverage_reports = Table(
    "coverage_reports",
    metadata,
    Column("pk", Integer, primary_key=True, autoincrement=True),
    Column("commit", String(64), nullable=False),
    Column("branch", String(255)),
    Column("fmt", String(32), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("created_utc", DateTime, nullable=False),
    Index("ix_coverage_commit", "commit"),
)
