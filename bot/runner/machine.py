"""What a run records about where it ran: revision, machine, package versions, and the default
target (the GPU when CuPy sees a usable CUDA device, else the CPU)."""
from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
from importlib import metadata
from pathlib import Path

from common.errors import UserError

_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")
_PACKAGES = ("perfbot", "numpy", "onnx", "onnxruntime", "cupy-cuda13x", "cupy-cuda12x", "cupy")


def git(args: list[str], cwd: Path | str | None = None) -> str | None:
    """``git ARGS`` output, stripped; None when git or the repository is not there."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def current_commit(cwd: Path | str | None = None) -> str:
    return git(["rev-parse", "HEAD"], cwd) or "unknown"


def current_branch(cwd: Path | str | None = None) -> str | None:
    name = git(["rev-parse", "--abbrev-ref", "HEAD"], cwd)
    return None if name in (None, "HEAD") else name  # "HEAD" means a detached checkout


def check_commit(commit: str) -> str:
    commit = commit.strip().lower()
    if commit != "unknown" and not _COMMIT.match(commit):
        raise UserError(f"--commit {commit!r} is not a hexadecimal commit id (7 to 64 digits)")
    return commit


def gpu_usable() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:  # no CuPy, no driver, no device: all mean "use the CPU"
        return False


def default_target() -> str:
    return "gpu" if gpu_usable() else "cpu"


def choose_target(asked: str | None) -> str:
    """The target to measure on; asking for the GPU without a usable one is refused up front."""
    if asked is None:
        return default_target()
    if asked == "gpu" and not gpu_usable():
        raise UserError("--target gpu needs CuPy and a usable CUDA device "
                        "(pip install 'perfbot[gpu]'); use --target cpu otherwise")
    return asked


def machine_info(target: str) -> dict:
    info = {"hostname": socket.gethostname(), "platform": platform.platform(),
            "python": platform.python_version(), "cpu": _cpu_name(), "cpu_count": str(os.cpu_count())}
    if target == "gpu":
        info.update(_gpu_info())
    return info


def package_versions() -> dict[str, str]:
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_libraries() -> dict:
    """Where the gpu target's libraries were found, and the fallbacks it takes for those it lacks
    (empty when none): the workers look the same way, so the run's record holds for them."""
    from compiler.targets.gpu import libraries

    found = libraries.probe()
    return {"gpu_libraries": "; ".join(" ".join(filter(None, (f.title, f.version, f.source, f.path)))
                                       for f in found if f.found) or "none",
            "gpu_fallback": libraries.fallback_line(libraries.fallbacks())}


def _gpu_info() -> dict:
    return {**_gpu_device(), **gpu_libraries()}


def _gpu_device() -> dict:
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return {"gpu": name.decode() if isinstance(name, bytes) else str(name),
                "gpu_memory_bytes": str(props.get("totalGlobalMem", "")),
                "cuda_driver": str(cupy.cuda.runtime.driverGetVersion()),
                "cuda_runtime": str(cupy.cuda.runtime.runtimeGetVersion())}
    except Exception as exc:  # recorded, not fatal: the rows will say what is wrong
        return {"gpu": f"unavailable ({type(exc).__name__})"}
