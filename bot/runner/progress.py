"""The progress display on stderr: which row, which phase (build, compile, warm-up, measure,
accuracy), rows done, elapsed time and ETA.

A live rich display when stderr is a terminal; one plain line per finished row when it is not
(CI logs); nothing with ``--quiet``.
"""
from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)


def make_display(total: int, quiet: bool = False, stream=None):
    stream = stream or sys.stderr
    if quiet:
        return NullDisplay()
    if stream.isatty():
        return RichDisplay(total, stream)
    return LineDisplay(total, stream)


class NullDisplay:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def row_started(self, label: str) -> None:
        pass

    def phase(self, label: str, side: str, phase: str) -> None:
        pass

    def row_finished(self, label: str, rows: list[dict], sides: list[str]) -> None:
        pass


def summary(rows: list[dict], sides: list[str]) -> str:
    """``12.3/s ok`` or ``error: reason`` per side, joined."""
    parts = []
    for side, row in zip(sides, rows):
        if row["status"] == "error":
            text = f"error: {row['error']}"
        else:
            acc = (row.get("accuracy") or {}).get("status", "-")
            text = f"{row['rate']:,.2f}/s {acc}" if row.get("rate") is not None else f"no samples {acc}"
        parts.append(text if side == "run" else f"{side} {text}")
    return "; ".join(parts)


class LineDisplay(NullDisplay):
    def __init__(self, total: int, stream):
        self.total, self.stream, self.done = total, stream, 0
        self.started = time.monotonic()

    def row_finished(self, label: str, rows: list[dict], sides: list[str]) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.started
        print(f"[{self.done}/{self.total} {elapsed:.0f}s] {label}: {summary(rows, sides)}",
              file=self.stream, flush=True)


class RichDisplay(NullDisplay):
    def __init__(self, total: int, stream):
        self.console = Console(file=stream, stderr=stream is sys.stderr)
        self.progress = Progress(
            SpinnerColumn(), TextColumn("[bold]{task.fields[row]}[/] {task.fields[phase]}"),
            BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
            TimeRemainingColumn(), console=self.console, transient=False)
        self.task = self.progress.add_task("suite", total=total, row="", phase="")

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.update(self.task, row="suite", phase="done")
        self.progress.stop()
        return False

    def row_started(self, label: str) -> None:
        self.progress.update(self.task, row=label, phase="start")

    def phase(self, label: str, side: str, phase: str) -> None:
        where = phase if side == "run" else f"{side}: {phase}"
        self.progress.update(self.task, row=label, phase=where)

    def row_finished(self, label: str, rows: list[dict], sides: list[str]) -> None:
        failed = any(r["status"] == "error" for r in rows)
        mark = "[red]✗[/]" if failed else "[green]✓[/]"
        self.progress.console.print(f"{mark} {escape(label)}: {escape(summary(rows, sides))}", markup=True,
                                    highlight=False)
        self.progress.advance(self.task)
