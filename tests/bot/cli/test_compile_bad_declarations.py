"""Models whose declarations are broken or hostile are refused at compile time in one line (exit
2): negative or huge declared shapes, attributes the operator's schema does not have, a Conv with
the wrong number of pads. Paddle's ``-1`` lengths are unknown lengths, bound like symbolic ones."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from bot.cli import main


def _save(path, nodes, shape, initializers=(), out_shape=None):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


WEIGHT = helper.make_tensor("w", TensorProto.FLOAT, [2, 3, 3, 3], np.full(54, 0.1, np.float32))


def _relu(tmp_path, shape, **attrs):
    return _save(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], **attrs)], shape)


def _conv(tmp_path, shape, **attrs):
    return _save(tmp_path / "m.onnx", [helper.make_node("Conv", ["x", "w"], ["y"], **attrs)], shape,
                 [WEIGHT])


CASES = {
    "huge": (lambda p: _relu(p, [1, 2**20, 2**20]),
             "input 'x' has shape [1, 1048576, 1048576]: 1099511627776 elements, more than"),
    "negative": (lambda p: _relu(p, [1, -3, 4]), "input 'x' dimension 1 is -3; a length cannot be negative"),
    "unknown attribute": (lambda p: _relu(p, [1, 3], bogus=3),
                          "node 'Relu': unknown attribute(s) 'bogus' for Relu (opset 17"),
    "conv with 3 pads": (lambda p: _conv(p, [1, 3, 8, 8], pads=[1, 1, 1]),
                         "attribute 'pads' has 3 value(s) [1, 1, 1]; expected 4 (a begin and an end"),
    "conv with 1 stride": (lambda p: _conv(p, [1, 3, 8, 8], strides=[2]),
                           "attribute 'strides' has 1 value(s) [2]; expected 2 (one per spatial axis)"),
    "paddle -1 lengths": (lambda p: _conv(p, [-1, 3, -1, -1], pads=[1, 1, 1, 1]),
                          "input 'x' dimension 2 is symbolic (unnamed); give its size with --dim x:2=N"),
}


@pytest.mark.parametrize("command", ["compile", "verify"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_declaration_is_one_line_and_exit_2(tmp_path, capsys, command, case):
    build, message = CASES[case]
    code = main([command, build(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_paddle_minus_one_lengths_bind_like_symbolic_ones(tmp_path, capsys):
    path = _conv(tmp_path, [-1, 3, -1, -1], pads=[1, 1, 1, 1])
    assert main(["verify", path, "--batch", "2", "--dim", "x:2=8", "--dim", "x:3=6"]) == 0
    assert "PASSED" in capsys.readouterr().out
