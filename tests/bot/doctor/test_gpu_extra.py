"""The ``gpu`` extra brings every library the gpu target loads: its names match the finder's, and
pip resolves it from the package index to cuDNN, the frontend, cuBLAS and NVML together."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement

from bot.doctor.facts import GPU_PACKAGES

from tests.paths import ROOT

RESOLVED = ("nvidia-cudnn-cu13", "nvidia-cudnn-frontend", "nvidia-cublas", "nvidia-ml-py", "cupy-cuda13x")


def gpu_extra() -> dict[str, str]:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"]
    return {re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower(): req for req in extra}


def test_extra_names_every_package_the_target_loads():
    assert set(gpu_extra()) == {name.lower() for name in GPU_PACKAGES}
    for name, req in gpu_extra().items():
        assert "<" in req or name == "nvidia-ml-py", f"{req}: no upper bound on a library the target calls"


def _pip(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})


def _index_unreachable() -> str | None:
    """Why the package index cannot be asked (None when it can): one small package's versions."""
    try:
        done = _pip("index", "versions", "nvidia-ml-py", timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}"
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no answer"])[-1]


@pytest.mark.slow
def test_pip_resolves_the_gpu_extra():
    """What the README tells a GPU runner to run, resolved (not installed): every library package
    is either in pip's install plan or already installed at a version the extra allows. pip
    fetches the wheels to read their metadata (about 1.4 GB the first time; its cache keeps them)."""
    if not (os.environ.get("CI") or os.environ.get("PERFBOT_TEST_INDEX") == "1"):
        pytest.skip("fetches about 1.4 GB of wheels: runs in CI (CI=true) or with PERFBOT_TEST_INDEX=1")
    why = _index_unreachable()
    if why:
        pytest.skip(f"the package index is unreachable from here ({why})")
    done = _pip("install", "--dry-run", "--quiet", "--report", "-", ".[gpu]", timeout=540)  # inside pytest-timeout's 600
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    planned = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report["install"]}
    extra = gpu_extra()
    for name in RESOLVED:
        version = planned.get(name) or _installed(name)
        assert version, f"pip resolved no {name}"
        assert Requirement(extra[name]).specifier.contains(version, prereleases=True), (name, version)


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
