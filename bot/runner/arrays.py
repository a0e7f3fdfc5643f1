"""Named arrays on disk (feeds, reference outputs) shared between processes of one run.

Tensor names are arbitrary strings (``input:0``, ``a/b``), so arrays are stored under positional
keys with the names kept alongside, rather than using the names as member file names.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def save_arrays(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    path = Path(path)
    members = {f"a{i}": np.asarray(v) for i, v in enumerate(arrays.values())}
    # a masked array (a reference's elements nobody wrote) keeps its mask beside it
    members.update({f"m{i}": np.ma.getmaskarray(v) for i, v in enumerate(arrays.values()) if np.ma.isMaskedArray(v)})
    members["names"] = np.array(list(arrays), dtype=object)
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    with open(partial, "wb") as fh:
        np.savez(fh, **members)
    os.replace(partial, path)  # readers never see a half-written file


def load_arrays(path: str | Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=True) as data:  # our own file: the names are an object array
        names = list(data["names"])
        return {str(name): np.ma.masked_array(data[f"a{i}"], mask=data[f"m{i}"]) if f"m{i}" in data.files
                else data[f"a{i}"] for i, name in enumerate(names)}
