"""The results store: runs, their rows and samples, coverage reports.

Every public method is one short transaction, so a row is durable as soon as ``add_row``
returns (a killed runner loses at most the row it was measuring) and concurrent shard
processes interleave safely. Documents are validated on the way in; what comes out is a
``perfbot.results/2`` document or its ``run`` object.
"""
from __future__ import annotations

import secrets
from collections import defaultdict
from datetime import datetime, timezone

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from bot.results_doc import SCHEMA_ID, legacy_measurement, validate_results

from . import convert
from .engine import _reason, display_url
from .errors import StoreError
from .tables import coverage_reports, rows, runs, samples

# Stand-in run used to validate a lone row against the document schema.
_PLACEHOLDER_RUN = {"id": "x", "commit": "unknown", "target": "ref",
                    "started": "2000-01-01T00:00:00Z"}


def _validate_run(run: dict) -> None:
    validate_results({"schema": SCHEMA_ID, "run": run, "rows": []})


def _validate_row(row: dict) -> None:
    validate_results({"schema": SCHEMA_ID, "run": _PLACEHOLDER_RUN, "rows": [row]})


def new_run_id(commit: str) -> str:
    """Readable and unique: the commit, the UTC time and a random tail."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{commit[:12]}-{stamp}-{secrets.token_hex(3)}"


class Store:
    """A results database. Open one with ``open_store``; one Store per process."""

    def __init__(self, engine: Engine):
        self.engine = engine

    # -- plumbing -----------------------------------------------------------------------------
    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def _tx(self):
        return _Transaction(self.engine)

    @staticmethod
    def _run_pk(conn: Connection, run_id: str) -> int:
        pk = conn.execute(select(runs.c.pk).where(runs.c.id == run_id)).scalar()
        if pk is None:
            raise StoreError(f"no run {run_id!r} in the results database")
        return pk

    # -- runs ---------------------------------------------------------------------------------
    def create_run(self, run: dict) -> str:
        """Record a new run (a results document's ``run`` object); returns its id."""
        run = dict(run)
        run.setdefault("started", convert.utc_now_iso())
        if not run.get("id"):
            run["id"] = new_run_id(str(run.get("commit") or "unknown"))
        _validate_run(run)
        with self._tx() as conn:
            self._insert_run(conn, run)
        return run["id"]

    @staticmethod
    def _insert_run(conn: Connection, run: dict) -> int:
        exists = conn.execute(select(runs.c.pk).where(runs.c.id == run["id"])).scalar()
        if exists is not None:
            raise StoreError(f"run {run['id']!r} is already in the results database")
        return conn.execute(insert(runs).values(**convert.run_to_columns(run))).inserted_primary_key[0]

    def finish_run(self, run_id: str, ended: str | None = None) -> None:
        """Stamp the run's end time (now, unless given)."""
        ended = ended or convert.utc_now_iso()
        run_stub = dict(_PLACEHOLDER_RUN, ended=ended)
        _validate_run(run_stub)
        with self._tx() as conn:
            self._run_pk(conn, run_id)
            conn.execute(update(runs).where(runs.c.id == run_id).values(ended=ended))

    def get_run(self, run_id: str) -> dict:
        """The whole run as a ``perfbot.results/2`` document, rows in suite order."""
        with self._tx() as conn:
            record = conn.execute(select(runs).where(runs.c.id == run_id)).first()
            if record is None:
                raise StoreError(f"no run {run_id!r} in the results database")
            run = convert.columns_to_run(record)
            # A run recorded before runs said how they were measured measured the old way.
            run.setdefault("measurement", legacy_measurement(run.get("target")))
            return {"schema": SCHEMA_ID, "run": run,
                    "rows": self._rows_of(conn, record.pk)}

    @staticmethod
    def _rows_of(conn: Connection, run_pk: int) -> list[dict]:
        records = conn.execute(
            select(rows).where(rows.c.run_pk == run_pk).order_by(rows.c.position, rows.c.pk)
        ).all()
        by_row = _samples_by_row(conn, [r.pk for r in records])
        return [convert.columns_to_row(r, by_row.get(r.pk, [])) for r in records]

    def find_runs(self, commit: str | None = None, branch: str | None = None,
                  target: str | None = None, suite: str | None = None, limit: int = 50,
                  *, include_merged: bool = False) -> list[dict]:
        """Run objects, newest first. ``commit`` matches by prefix. Shards already merged into
        another run are left out unless ``include_merged``."""
        query = select(runs)
        if commit:
            query = query.where(runs.c.commit.startswith(commit.lower(), autoescape=True))
        if branch is not None:
            query = query.where(runs.c.branch == branch)
        if target is not None:
            query = query.where(runs.c.target == target)
        if suite is not None:
            query = query.where(runs.c.suite == suite)
        if not include_merged:
            query = query.where(runs.c.merged_into.is_(None))
        query = query.order_by(runs.c.started_utc.desc(), runs.c.pk.desc()).limit(limit)
        with self._tx() as conn:
            return [convert.columns_to_run(r) for r in conn.execute(query).all()]

    def latest_run(self, branch: str, target: str | None = None) -> dict | None:
        """The newest finished, complete run of ``branch`` (not an unmerged shard), or None."""
        query = select(runs).where(
            runs.c.branch == branch, runs.c.ended.is_not(None), runs.c.shard.is_(None),
            runs.c.merged_into.is_(None),
        )
        if target is not None:
            query = query.where(runs.c.target == target)
        query = query.order_by(runs.c.started_utc.desc(), runs.c.pk.desc()).limit(1)
        with self._tx() as conn:
            record = conn.execute(query).first()
        return convert.columns_to_run(record) if record is not None else None

    def count_rows(self, run_id: str) -> int:
        with self._tx() as conn:
            pk = self._run_pk(conn, run_id)
            return conn.execute(select(func.count()).where(rows.c.run_pk == pk)).scalar()

    # -- rows ---------------------------------------------------------------------------------
    def add_row(self, run_id: str, row: dict, position: int | None = None) -> None:
        """Store one results-document row (with samples and accuracy), committed at once.
        A row with the same (name, batch, mode) in that run is replaced, keeping its place.
        ``position``: its place in the suite (rows measured side by side on several GPUs finish
        out of order); by default after the rows already stored."""
        _validate_row(row)
        with self._tx() as conn:
            self._put_row(conn, self._run_pk(conn, run_id), row, position)

    def row_costs(self, target: str, limit: int = 5000) -> dict[tuple[str, int, str], float]:
        """{(name, batch, mode): seconds} of each row's newest successful measurement on
        ``target``: the time it took (``wall_s``), else its compile time; for scheduling the
        longest rows first."""
        query = (select(rows.c.name, rows.c.batch, rows.c.mode, rows.c.compile_s, rows.c.extra)
                 .join(runs, rows.c.run_pk == runs.c.pk)
                 .where(runs.c.target == target, rows.c.status == "ok")
                 .order_by(runs.c.started_utc.desc(), runs.c.pk.desc()).limit(limit))
        with self._tx() as conn:
            found = conn.execute(query).all()
        costs: dict = {}
        for name, batch, mode, compile_s, extra in found:
            seconds = (extra or {}).get("wall_s", compile_s)
            if isinstance(seconds, (int, float)):
                costs.setdefault((name, batch, mode), float(seconds))
        return costs

    @staticmethod
    def _put_row(conn: Connection, run_pk: int, row: dict, position: int | None = None) -> None:
        """Upsert on (run, name, batch, mode): a replaced row keeps its place unless ``position``
        is given. Concurrent writers of one run must not collide on the key nor share a position,
        so both come from the database in one statement, after the run's row is locked."""
        values, values_samples = convert.row_to_columns(row)
        _lock_run(conn, run_pk)
        if position is None:
            place = (select(func.coalesce(func.max(rows.c.position), 0) + 1)
                     .where(rows.c.run_pk == run_pk).scalar_subquery())
            on_conflict = values
        else:
            place = position
            on_conflict = dict(values, position=position)
        statement = _dialect_insert(conn)(rows).values(run_pk=run_pk, position=place, **values)
        row_pk = conn.execute(
            statement.on_conflict_do_update(index_elements=_ROW_KEY, set_=on_conflict)
            .returning(rows.c.pk)
        ).scalar_one()
        conn.execute(delete(samples).where(samples.c.row_pk == row_pk))
        if values_samples:
            conn.execute(insert(samples), [{"row_pk": row_pk, "idx": i, "value": v}
                                           for i, v in enumerate(values_samples)])

    def recorded_rows(self, run_id: str) -> set[tuple[str, int, str]]:
        """(name, batch, mode) of every row already stored for the run (for --resume)."""
        with self._tx() as conn:
            pk = self._run_pk(conn, run_id)
            found = conn.execute(select(rows.c.name, rows.c.batch, rows.c.mode)
                                 .where(rows.c.run_pk == pk)).all()
        return {(name, batch, mode) for name, batch, mode in found}

    def history(self, name: str, batch: int, mode: str, branch: str | None = None,
                target: str | None = None, limit: int = 30) -> list[dict]:
        """The row's successful measurements in past runs, oldest first (at most ``limit``,
        the newest ones): {"commit", "run_id", "started", "rate", "samples"}."""
        query = (
            select(rows.c.pk, rows.c.rate, runs.c.commit, runs.c.id, runs.c.started)
            .join(runs, rows.c.run_pk == runs.c.pk)
            .where(rows.c.name == name, rows.c.batch == batch, rows.c.mode == mode,
                   rows.c.status == "ok", rows.c.rate.is_not(None), runs.c.merged_into.is_(None))
        )
        if branch is not None:
            query = query.where(runs.c.branch == branch)
        if target is not None:
            query = query.where(runs.c.target == target)
        query = query.order_by(runs.c.started_utc.desc(), runs.c.pk.desc()).limit(limit)
        with self._tx() as conn:
            found = conn.execute(query).all()
            by_row = _samples_by_row(conn, [r.pk for r in found])
        return [{"commit": r.commit, "run_id": r.id, "started": r.started, "rate": r.rate,
                 "samples": by_row.get(r.pk, [])} for r in reversed(found)]

    # -- documents ----------------------------------------------------------------------------
    def import_document(self, doc: dict) -> str:
        """Store a whole results document (validated first) as one run; returns its id."""
        validate_results(doc)
        with self._tx() as conn:
            run_pk = self._insert_run(conn, doc["run"])
            for position, row in enumerate(doc["rows"], start=1):
                self._put_row(conn, run_pk, row, position)
        return doc["run"]["id"]

    def merge_runs(self, run_ids: list[str], new_run: dict | None = None) -> str:
        """Combine shard runs of one commit and target into a new run; returns its id.
        The shards stay in the store, marked as merged, and drop out of history and listings."""
        if not run_ids:
            raise StoreError("nothing to merge: no run ids given")
        if len(set(run_ids)) != len(run_ids):
            raise StoreError("the same run is named twice in the merge")
        with self._tx() as conn:
            records = [self._merge_source(conn, run_id) for run_id in run_ids]
            run = _merged_run(records, new_run)
            _validate_run(run)
            merged_rows = _merged_rows(conn, records)
            run_pk = self._insert_run(conn, run)
            for position, row in enumerate(merged_rows, start=1):
                self._put_row(conn, run_pk, row, position)
            conn.execute(update(runs).where(runs.c.id.in_(run_ids)).values(merged_into=run["id"]))
        return run["id"]

    @staticmethod
    def _merge_source(conn: Connection, run_id: str):
        record = conn.execute(select(runs).where(runs.c.id == run_id)).first()
        if record is None:
            raise StoreError(f"no run {run_id!r} in the results database")
        if record.merged_into:
            raise StoreError(f"run {run_id!r} was already merged into {record.merged_into!r}")
        return record

    # -- coverage -----------------------------------------------------------------------------
    def save_coverage(self, commit: str, fmt: str, data: bytes, branch: str | None = None) -> None:
        """Keep one coverage report (raw bytes in format ``fmt``, e.g. "cobertura") of a commit."""
        if not isinstance(data, (bytes, bytearray)):
            raise StoreError("coverage data must be bytes")
        with self._tx() as conn:
            conn.execute(insert(coverage_reports).values(
                commit=commit.lower(), branch=branch, fmt=fmt, data=bytes(data),
                created_utc=datetime.now(timezone.utc).replace(tzinfo=None)))

    def load_coverage(self, commit: str) -> tuple[str, bytes] | None:
        """The newest coverage report of ``commit`` (prefix match) as (fmt, data), or None.
        A prefix that matches reports of several commits is refused: taking the newest would
        silently compare against another commit's coverage."""
        match = coverage_reports.c.commit.startswith(commit.lower(), autoescape=True)
        query = (select(coverage_reports.c.fmt, coverage_reports.c.data).where(match)
                 .order_by(coverage_reports.c.created_utc.desc(), coverage_reports.c.pk.desc())
                 .limit(1))
        with self._tx() as conn:
            commits = conn.execute(select(coverage_reports.c.commit).where(match).distinct()
                                   .limit(5)).scalars().all()
            if len(commits) > 1:
                raise StoreError(f"commit prefix {commit!r} matches coverage reports of several "
                                 f"commits ({', '.join(sorted(c[:12] for c in commits))}); give more "
                                 "of the SHA")
            found = conn.execute(query).first()
        return (found.fmt, bytes(found.data)) if found is not None else None


class _Transaction:
    """engine.begin() that turns database failures into a one-line StoreError."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._ctx = None

    def __enter__(self) -> Connection:
        try:
            self._ctx = self.engine.begin()
            return self._ctx.__enter__()
        except SQLAlchemyError as exc:
            raise StoreError(f"results database {display_url(self.engine.url)}: "
                             f"{_reason(exc)}") from None

    def __exit__(self, exc_type, exc, tb):
        try:
            # Rolls back when the body raised, and then re-raises nothing itself: an error of a
            # statement inside the ``with`` comes back to us as ``exc``, not from this call.
            self._ctx.__exit__(exc_type, exc, tb)
        except SQLAlchemyError as err:
            raise self._error(err) from None
        if isinstance(exc, SQLAlchemyError):
            raise self._error(exc) from None
        return False

    def _error(self, err: SQLAlchemyError) -> StoreError:
        if isinstance(err, IntegrityError):
            return StoreError(f"results database refused the write: {_reason(err)}")
        return StoreError(f"results database {display_url(self.engine.url)}: {_reason(err)}")


_ROW_KEY = [rows.c.run_pk, rows.c.name, rows.c.batch, rows.c.mode]
_INSERTS = {"postgresql": postgresql_insert, "sqlite": sqlite_insert}


def _dialect_insert(conn: Connection):
    """The INSERT that knows ON CONFLICT, for the two databases the store supports."""
    try:
        return _INSERTS[conn.dialect.name]
    except KeyError:
        raise StoreError(f"the results database must be SQLite or PostgreSQL, not "
                         f"{conn.dialect.name}") from None


def _lock_run(conn: Connection, run_pk: int) -> None:
    """Writers of one run take turns from here to their commit (PostgreSQL's row lock; SQLite's
    BEGIN IMMEDIATE already serialises every writer), so the next position is never shared."""
    conn.execute(select(runs.c.pk).where(runs.c.pk == run_pk).with_for_update())


def _samples_by_row(conn: Connection, row_pks: list[int]) -> dict[int, list[float]]:
    found: dict[int, list[float]] = defaultdict(list)
    # Chunked so a long history never exceeds a driver's bound-parameter limit.
    for start in range(0, len(row_pks), 500):
        chunk = row_pks[start:start + 500]
        query = (select(samples.c.row_pk, samples.c.value).where(samples.c.row_pk.in_(chunk))
                 .order_by(samples.c.row_pk, samples.c.idx))
        for row_pk, value in conn.execute(query):
            found[row_pk].append(value)
    return found


def _merged_run(records: list, new_run: dict | None) -> dict:
    first = convert.columns_to_run(records[0])
    for record in records[1:]:
        if (record.commit, record.target) != (records[0].commit, records[0].target):
            raise StoreError(
                f"cannot merge runs of different commits or targets: {records[0].id!r} is "
                f"{records[0].commit[:12]}/{records[0].target}, {record.id!r} is "
                f"{record.commit[:12]}/{record.target}")
    ends = [r.ended for r in records]
    run = {key: value for key, value in first.items() if key not in ("id", "shard")}
    run["started"] = min(records, key=lambda r: r.started_utc).started
    # Unfinished if any shard is; otherwise the last shard's end.
    run["ended"] = None if None in ends else max(records, key=lambda r: convert.to_naive_utc(r.ended)).ended
    run.update(new_run or {})
    if not run.get("id"):
        run["id"] = new_run_id(run["commit"])
    return run


def _merged_rows(conn: Connection, records: list) -> list[dict]:
    merged: list[tuple[tuple, dict]] = []
    owner: dict[tuple, str] = {}
    interleave = _shard_layout(records)
    for source, record in enumerate(records):
        for position, row in enumerate(Store._rows_of(conn, record.pk)):
            key = (row["name"], row["batch"], row["mode"])
            if key in owner:
                raise StoreError(f"row {row['name']!r} batch {row['batch']} {row['mode']} is in "
                                 f"both {owner[key]!r} and {record.id!r}; merge one of them")
            owner[key] = record.id
            if interleave:
                # Shard i of N measured suite rows i-1, i-1+N, ... (1-based i): put them back.
                index, count = interleave[source]
                order = position * count + index - 1
            else:
                order = (source, position)
            merged.append((order, row))
    rows_only = [row for _, row in merged]
    # Rows that carry their suite position ("index") say the order themselves.
    if rows_only and all(isinstance(r.get("index"), int) for r in rows_only):
        return sorted(rows_only, key=lambda r: r["index"])
    return [row for _, row in sorted(merged, key=lambda item: item[0])]


def _shard_layout(records: list) -> list[tuple[int, int]] | None:
    """[(i, N)] when the runs are distinct shards i/N of one N, else None."""
    try:
        layout = [tuple(int(part) for part in (r.shard or "").split("/")) for r in records]
    except ValueError:
        return None
    if not layout or any(len(item) != 2 for item in layout):
        return None
    if len({n for _, n in layout}) != 1 or len({i for i, _ in layout}) != len(layout):
        return None
    return layout
