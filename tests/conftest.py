"""Shared fixtures.

``db_url`` runs a test once per database engine: a fresh SQLite file, and PostgreSQL from
$PERFBOT_TEST_POSTGRES_URL where every test gets its own schema (dropped afterwards) so tests
never see each other's rows. CI (``.ci/run``) always starts PostgreSQL; there a missing URL is a
failure, locally it only skips the PostgreSQL half.
"""
from __future__ import annotations

import os
import uuid

import numpy as np
import pytest

POSTGRES_ENV = "PERFBOT_TEST_POSTGRES_URL"


def _postgres_base_url() -> str | None:
    url = os.environ.get(POSTGRES_ENV)
    if url:
        return url
    if os.environ.get("CI"):
        pytest.fail(f"{POSTGRES_ENV} is not set; CI must start PostgreSQL (.ci/start-postgres.sh)")
    pytest.skip(f"{POSTGRES_ENV} not set (start one with: bash .ci/start-postgres.sh)")


def _fresh_postgres_schema(base_url: str):
    """Create a schema of its own; yield a URL whose connections use it; drop it after."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(base_url)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    # libpq "options": every connection (also those of subprocesses) starts in this schema.
    scoped = url.update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """A SQLAlchemy URL of an empty database, once for SQLite and once for PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'results.db'}"
        return
    yield from _fresh_postgres_schema(_postgres_base_url())


# -- results documents for store, results and compare tests ----------------------------------------

RESULTS_SCHEMA = "perfbot.results/2"


def make_row(name: str, rate: float = 100.0, *, batch: int = 1, mode: str = "fp32",
             noise_pct: float = 1.0, n: int = 10, seed: int = 0, status: str = "ok",
             accuracy: str | None = "PASSED", **extra) -> dict:
    if status == "error":
        return {"name": name, "batch": batch, "mode": mode, "status": "error",
                "error": extra.pop("error", "worker crashed"), "rate": None, "samples": [],
                "compile_s": None, "peak_mem_bytes": None, "accuracy": None, **extra}
    rng = np.random.default_rng(seed)
    samples = [float(v) for v in rate * (1 + rng.normal(0, noise_pct / 100, n))]
    acc = None if accuracy is None else {
        "status": accuracy, "rtol": 1e-3, "atol": 1e-3, "max_abs_err": 1e-5,
        "max_rel_err": 2e-5, "worst_output": "out0", "worst_index": [0, 3], "nonfinite": False}
    return {"name": name, "batch": batch, "mode": mode, "status": "ok", "error": None,
            "rate": float(np.median(samples)), "samples": samples, "compile_s": 1.5,
            "peak_mem_bytes": 123456, "accuracy": acc, **extra}


def make_doc(rows: list[dict], *, run_id: str = "run-1", commit: str = "a" * 40,
             branch: str | None = "main", target: str = "cpu",
             started: str = "2026-11-01T10:00:00Z", ended: str | None = "2026-11-01T10:30:00Z",
             **run_extra) -> dict:
    run = {"id": run_id, "commit": commit, "branch": branch, "target": target, "suite": "smoke",
           "shard": None, "started": started, "ended": ended,
           "machine": {"hostname": "bench-1", "gpu": "none"}, "versions": {"perfbot": "0.1.0"},
           "measurement": {"rate": "device" if target == "gpu" else "host", "sample": "autorange"},
           **run_extra}
    return {"schema": RESULTS_SCHEMA, "run": run, "rows": rows}


@pytest.fixture
def row_factory():
    """make_row(name, rate, batch=, mode=, noise_pct=, n=, seed=, status=, accuracy=, **extra)."""
    return make_row


@pytest.fixture
def doc_factory():
    """make_doc(rows, run_id=, commit=, branch=, target=, started=, ended=, **run_extra)."""
    return make_doc
