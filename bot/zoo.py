"""The benchmark zoo's rows for ``perfbot models``: chosen by name or suite, and their size."""
from __future__ import annotations

from common.errors import UserError


def zoo_rows(manifest_path: str | None, names: str | None, suite: str | None) -> list:
    """The rows named (comma-separated), or of ``suite``, of the manifest at ``manifest_path``
    (default: the packaged one)."""
    from bot.selection import check_manifest_path
    from models.manifest import load_manifest
    check_manifest_path(manifest_path)
    manifest = load_manifest(manifest_path)
    if names and suite:
        raise UserError("give row names or --suite, not both")
    if names:
        return manifest.select(names)
    if suite:
        return manifest.suite(suite)
    # Without --suite: the "default" suite where the manifest has one, else every row it holds.
    return manifest.suite("default") if "default" in manifest.suites else list(manifest.rows)


def row_size(row) -> tuple[int, float]:
    """(parameters, GFLOPs per inference) of a manifest row."""
    from compiler.onnx.load import load_structure
    from models.cache import build_graph
    from models.stats import count_flops, count_parameters
    if row.builder:
        try:
            graph = build_graph(row)  # shapes only: nothing is generated
        except (KeyError, ValueError, TypeError) as exc:
            # The manifest checks option names, not values: a bad value fails in the builder.
            raise UserError(f"row {row.name!r}: builder {row.builder!r} cannot build with options "
                            f"{row.options} ({type(exc).__name__}: {exc})") from None
        return graph.param_count(), count_flops(graph.shape_only_model()) / 1e9
    model = load_structure(row.path)  # shapes only (weights not read); a corrupt file is a one-line ModelLoadError
    return count_parameters(model), count_flops(model) / 1e9
