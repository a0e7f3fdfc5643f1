"""Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import result, tuple_shape, widen
from .registry import Op, register_op


def nll(log_prob, target, weight, reduction, ignore_index):
    """-log_prob[n, target[n, ...], ...] weighted; ignored targets weigh nothing."""
    target = target.astype(np.int64)
    ignored = target == ignore_index if ignore_index is not None else np.zeros(target.shape, bool)
    safe = np.where(ignored, 0, target)
    picked = np.take_along_axis(log_prob, np.expand_dims(safe, 1), axis=1)[:, 0]
    w = np.ones(log_prob.shape[1], log_prob.dtype) if weight is None else weight
    wt = np.where(ignored, 0, w[safe])
    loss = -picked * wt
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    total = wt.sum()
    return loss.sum() / total if total else np.zeros((), log_prob.dtype)


class Loss(Op):
    def from_onnx(self, node):
        return {"reduction": node.attrs.get("reduction", "mean"), "ignore_index": node.attrs.get("ignore_index"),
                "outputs": max(node.num_outputs, 1)}, node.present_inputs()

    def loss_shape(self, attrs, inputs):
        x, target = inputs[0], inputs[1]
        return Shape(x.dtype, target.lens if attrs["reduction"] == "none" else ())


@register_op
class NegativeLogLikelihoodLoss(Loss):
    name = "NegativeLogLikelihoodLoss"

    def shape(self, attrs, inputs, literals):
        return self.loss_shape(attrs, inputs)

    def compute(self, attrs, x, target, weight=None):
        out = nll(widen(x), target, None if weight is None else widen(weight), attrs["reduction"], attrs["ignore_index"])
        return result(out, x.dtype)


@register_op
class SoftmaxCrossEntropyLoss(Loss):
    """NLL of log-softmax over axis 1; the log-probabilities are the optional second result."""

    name = "SoftmaxCrossEntropyLoss"

    def shape(self, attrs, inputs, literals):
        loss = self.loss_shape(attrs, inputs)
        return loss if attrs["outputs"] == 1 else tuple_shape(loss, inputs[0])

    def compute(self, attrs, x, target, weight=None):
        xs = widen(x)
        shifted = xs - xs.max(axis=1, keepdims=True)
        log_prob = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = result(nll(log_prob, target, None if weight is None else widen(weight), attrs["reduction"],
                          attrs["ignore_index"]), x.dtype)
        return loss if attrs["outputs"] == 1 else (loss, result(log_prob, x.dtype))
