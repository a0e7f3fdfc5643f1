"""Options every command shares, defined once so that they read the same everywhere."""
from __future__ import annotations

FORMATS = ("text", "markdown", "json")


def add_format(parser, help: str = "output format") -> None:
    """``--format text|markdown|json`` (DESIGN: every command that prints a result has it)."""
    parser.add_argument("--format", choices=FORMATS, default="text", help=help)


def add_devices(parser) -> None:
    """``--devices all|0,1,...`` (``run``, ``ab``, ``calibrate``, ``verify``): the GPUs to use,
    one worker per GPU; see ``bot.runner.devices``."""
    parser.add_argument("--devices", metavar="all|I,J,...",
                        help="GPUs of this host to spread the rows over, one row per GPU at a "
                        "time ('all', or CUDA indices such as 0,1; gpu target only; default: "
                        "one GPU, rows one after another)")
