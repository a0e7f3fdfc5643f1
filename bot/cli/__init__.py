"""The ``perfbot`` command line.

Each command group lives in its own module in this package named ``*_cmd.py`` with a
``register(subparsers)`` function; they are discovered here so that adding a command never means
editing a shared list.
"""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from common.errors import UserError


class OneLineParser(argparse.ArgumentParser):
    """argparse answers a bad option with the whole usage and then the error; here a usage
    error is one line like every other user error, pointing at the command's --help.
    Sub-command parsers are made of the same class, so this holds for all of them."""

    def error(self, message: str):
        where = self.prog.removeprefix("perfbot").strip()
        prefix = f"{where}: " if where else ""
        self.exit(2, f"perfbot: error: {prefix}{message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="perfbot",
        description="Performance and accuracy CI bot for deep-learning compilers.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.endswith("_cmd"):
            importlib.import_module(f"{__name__}.{info.name}").register(subparsers)
    return parser


def _tolerant_output() -> None:
    """Reports use ✅ 🔴 ❌ · and other non-ASCII characters. Where stdout cannot encode them (an
    ASCII or Latin-1 locale, PYTHONIOENCODING=ascii) they become '?', instead of a
    UnicodeEncodeError after the work is done (a run measured and stored, its table lost)."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def main(argv: list[str] | None = None) -> int:
    _tolerant_output()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        # A user's mistake gets one readable line and exit code 2, never a traceback. Messages
        # quote other tools (ONNX Runtime, git, TOML parsers) whose text may span lines.
        print(f"perfbot: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perfbot: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Whoever read our output stopped early (`perfbot ... | head`): nothing is wrong with the
        # command, so no traceback; point stdout at /dev/null so the final flush cannot fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # as a shell reports a process ended by SIGPIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
