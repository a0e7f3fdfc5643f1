"""perfbot's graph compiler: ONNX → IR → passes → targets (ref, cpu, gpu).

    import compiler
    program = compiler.parse_onnx("model.onnx", batch_size=8)
    program.compile(targets="cpu")
    outputs = program.run({"input": x})
"""
from compiler.errors import (CompileError, FeedError, ModelLoadError, UnsupportedOperatorError,
                             UserError)
from compiler.ir import Instruction, Module, Program, Shape, TupleShape


def parse_onnx(model_or_path, batch_size: int | None = None, **options) -> Program:
    """Load an ONNX model (a path, bytes or a ``ModelProto``) into a ``Program``; ``options``
    go to ``compiler.onnx.parser.parse_onnx`` (``dims={"seq": 128}`` binds named dimensions)."""
    from compiler.onnx.parser import parse_onnx as _parse
    return _parse(model_or_path, batch_size=batch_size, **options)


__all__ = ["parse_onnx", "Program", "Module", "Instruction", "Shape", "TupleShape", "UserError",
           "ModelLoadError", "UnsupportedOperatorError", "FeedError", "CompileError"]
