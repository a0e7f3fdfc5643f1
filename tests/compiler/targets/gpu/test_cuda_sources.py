"""The gpu kernels' CUDA sources are ``.cu`` files read by name, and the package ships them."""
import tomllib
from pathlib import Path

from compiler.targets.gpu.kernels.raw_source import CUDA_DIR, cuda_source

ROOT = Path(__file__).resolve().parents[4]


def test_every_cu_file_reads_once_by_name():
    names = sorted(p.stem for p in CUDA_DIR.glob("*.cu"))
    assert "rnn_step" in names and "depthwise_nhwc" in names
    for name in names:
        assert cuda_source(name) is cuda_source(name) and cuda_source(name).strip()


def test_the_cu_files_are_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "cuda/*.cu" in data["compiler.targets.gpu.kernels"]
