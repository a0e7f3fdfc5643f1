"""Opening files named by untrusted input: a coverage report given on the command line, and the
source files a report names.

A report comes from a CI artifact, perhaps of a fork, and its content picks the paths a reader
looks at (a Go profile line ``../../../../dev/zero:1.1,2.2 1 0`` names /dev/zero). So a source
file is read only when, with every symlink resolved, it lies inside the checkout, is a regular
file (not a device, FIFO or folder) and is no larger than a source file plausibly is. A report or
diff given by the user may lie anywhere, but it too must be a regular file of bounded size.
"""
from __future__ import annotations

import os
import stat

from .errors import CoverageInputError

# The largest coverage report or diff read (a whole-monorepo LCOV trace runs to a few hundred MB).
MAX_REPORT_BYTES = 1024 * 1024 * 1024
# The largest source file a reader looks into; a bigger one is treated as absent.
MAX_SOURCE_BYTES = 16 * 1024 * 1024


def check_input_file(path: str, what: str = "coverage report") -> None:
    """Refuse (one line) anything but a regular file of at most MAX_REPORT_BYTES."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise CoverageInputError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise CoverageInputError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        raise CoverageInputError(f"{path}: is a folder; give the {what} file in it")
    if not stat.S_ISREG(info.st_mode):
        raise CoverageInputError(f"{path}: not a regular file; a {what} must be one")
    if info.st_size > MAX_REPORT_BYTES:
        raise CoverageInputError(f"{path}: {info.st_size} bytes, more than the "
                                 f"{MAX_REPORT_BYTES // 2**20} MiB a {what} may have")


def inside(root: str, rel: str) -> str | None:
    """The real path of ``rel`` under ``root`` when it stays inside ``root`` (symlinks resolved)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    return real if real == real_root or real.startswith(real_root + os.sep) else None


def read_checkout_file(root: str, rel: str) -> bytes | None:
    """The bytes of the checkout's file ``rel``, or None when it is absent, lies outside the
    checkout, is not a regular file or is larger than MAX_SOURCE_BYTES."""
    real = inside(root, rel)
    if real is None:
        return None
    try:
        # O_NONBLOCK: were a FIFO swapped in after the check, opening it must not hang.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        return handle.read(MAX_SOURCE_BYTES + 1)[:MAX_SOURCE_BYTES]
