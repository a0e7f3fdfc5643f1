"""Detection helpers: NonMaxSuppression and Col2Im."""
from __future__ import annotations

import itertools

import numpy as np

from compiler.ir.shape import Shape

from .common import fold_inputs, given_inputs, result, run_values, scalar_or_none, widen
from .registry import Op, register_op
from .windows import BEGIN_END, list_attr


def _scalar(value, default):
    item = None if value is None else scalar_or_none(value)
    return default if item is None else item


def _corners(boxes, center_point_box):
    if center_point_box:
        xc, yc, w, h = (boxes[..., k] for k in range(4))
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)
    y1, x1, y2, x2 = (boxes[..., k] for k in range(4))
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], axis=-1)


def _iou_with(box, others):
    """IoU of one (top, left, bottom, right) box with each of ``others``; 0 where the union is
    empty, so a degenerate box never suppresses nor is suppressed."""
    top, left = np.maximum(box[0], others[:, 0]), np.maximum(box[1], others[:, 1])
    bottom, right = np.minimum(box[2], others[:, 2]), np.minimum(box[3], others[:, 3])
    inter = np.maximum(0.0, bottom - top) * np.maximum(0.0, right - left)
    union = (box[2] - box[0]) * (box[3] - box[1]) + \
        (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1]) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def _greedy_keep(boxes, order, limit: int, iou_limit: float) -> list[int]:
    """Candidates in ``order`` kept while each one's IoU with every kept box is ≤ ``iou_limit``:
    each kept box suppresses the later candidates it overlaps, one vectorised pass per kept box
    (detection heads hand NMS thousands of candidates)."""
    kept: list[int] = []
    alive = np.asarray(order, dtype=np.int64)
    while alive.size and len(kept) < limit:
        first, alive = int(alive[0]), alive[1:]
        kept.append(first)
        alive = alive[_iou_with(boxes[first], boxes[alive]) <= iou_limit]
    return kept


@register_op
class NonMaxSuppression(Op):
    """Greedy per (batch, class) selection by descending score, dropping boxes whose IoU with
    a kept one exceeds iou_threshold; rows of (batch, class, box)."""

    name = "NonMaxSuppression"
    names = ["boxes", "scores", "max_output", "iou_threshold", "score_threshold"]

    def from_onnx(self, node):
        present, inputs = given_inputs(node, self.names)
        return {"center_point_box": int(node.attrs.get("center_point_box", 0)), "inputs": present}, inputs

    def shape(self, attrs, inputs, literals):
        return Shape("int64", (None, 3))

    def compute(self, attrs, *args):
        return select_boxes(attrs, args, _greedy_keep)


def select_boxes(attrs, args, keep) -> np.ndarray:
    """NonMaxSuppression's rows, ``keep(boxes, order, limit, iou_limit)`` choosing within each
    (batch, class) (the cpu target passes a compiled one)."""
    v = dict(zip(attrs["inputs"], args))
    boxes = _corners(widen(v["boxes"]).astype(np.float64), attrs["center_point_box"])
    scores = widen(v["scores"]).astype(np.float64)
    limit = int(_scalar(v.get("max_output"), 0))
    iou_limit = float(_scalar(v.get("iou_threshold"), 0.0))
    floor = _scalar(v.get("score_threshold"), None)
    rows = []
    for b, c in itertools.product(range(scores.shape[0]), range(scores.shape[1])):
        s = scores[b, c]
        order = np.argsort(-s, kind="stable")
        if floor is not None:
            order = order[s[order] > floor]
        rows += [[b, c, int(i)] for i in keep(boxes[b], order, limit, iou_limit)]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


@register_op
class Col2Im(Op):
    """Sum sliding blocks (columns of (N, C·prod(block), L)) back into images."""

    name = "Col2Im"

    def from_onnx(self, node):
        attrs, inputs = fold_inputs(node, 1, ["image_shape", "block_shape"])
        nd = node.input(1).shape.lens[0]
        attrs.update({"dilations": list_attr(node, "dilations", nd, 1, 1),
                      "pads": list_attr(node, "pads", 2 * nd, 0, 0, BEGIN_END),
                      "strides": list_attr(node, "strides", nd, 1, 1)})
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        nd = len(attrs["dilations"])
        if attrs.get("dynamic"):
            return Shape(x.dtype, (x.lens[0],) + (None,) * (nd + 1))
        c = None if x.lens[1] is None else x.lens[1] // int(np.prod(attrs["block_shape"]))
        return Shape(x.dtype, (x.lens[0], c, *attrs["image_shape"]))

    def compute(self, attrs, x, *args):
        v = run_values(attrs, (x, *args), 1, ["image_shape", "block_shape"])
        image, block = v["image_shape"], v["block_shape"]
        d, p, s = attrs["dilations"], attrs["pads"], attrs["strides"]
        nd = len(image)
        n, cols = x.shape[0], x.shape[1]
        c = cols // int(np.prod(block))
        grid = [(image[k] + p[k] + p[k + nd] - (d[k] * (block[k] - 1) + 1)) // s[k] + 1 for k in range(nd)]
        padded = np.zeros((n, c, *[image[k] + p[k] + p[k + nd] for k in range(nd)]), dtype=np.float64)
        cols4 = widen(x).astype(np.float64).reshape(n, c, *block, *grid)
        for tap in np.ndindex(*block):
            where = tuple(slice(tap[k] * d[k], tap[k] * d[k] + (grid[k] - 1) * s[k] + 1, s[k]) for k in range(nd))
            padded[(slice(None), slice(None)) + where] += cols4[(slice(None), slice(None)) + tap]
        crop = tuple(slice(p[k], p[k] + image[k]) for k in range(nd))
        return result(padded[(slice(None), slice(None)) + crop], x.dtype)


def _axis_taps(pos: np.ndarray, size: int):
    """Bilinear taps along one axis, RoiAlign's way: positions beyond [-1, size] read nothing;
    the rest clamp at 0 and at the last pixel."""
    valid = (pos >= -1.0) & (pos <= size)
    p = np.maximum(pos, 0.0)
    low = np.floor(p).astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    p = np.where(at_end, low, p)
    frac = p - low
    return low, high, 1 - frac, frac, valid


# The most samples (regions x channels x grid points) one pooling step holds, in float64.
_POOL_ELEMENTS = 1 << 22


def _pool_regions(image, boxes, gh: int, gw: int, out_hw, mode: str) -> np.ndarray:
    """RoiAlign of regions that share a gh x gw sampling grid per bin: ``boxes`` holds their left
    and top edges, bin widths and heights and batch indices; returns (regions, C, oh, ow)."""
    x1, y1, bw, bh, batch = (b[:, None, None] for b in boxes)
    oh, ow = out_hw
    h, w = image.shape[2:]
    ys = y1 + np.arange(oh)[:, None] * bh + (np.arange(gh)[None, :] + 0.5) * bh / gh    # (n, oh, gh)
    xs = x1 + np.arange(ow)[:, None] * bw + (np.arange(gw)[None, :] + 0.5) * bw / gw    # (n, ow, gw)
    ylo, yhi, wyl, wyh, vy = (t[:, :, :, None, None] for t in _axis_taps(ys, h))
    xlo, xhi, wxl, wxh, vx = (t[:, None, None] for t in _axis_taps(xs, w))
    valid = vy & vx
    batch = batch[:, :, :, None, None]
    corners = [(ylo, xlo, wyl * wxl), (ylo, xhi, wyl * wxh), (yhi, xlo, wyh * wxl), (yhi, xhi, wyh * wxh)]
    # Gathered as (n, oh, gh, ow, gw, C), then laid out (n, C, oh, gh, ow, gw): each region's block
    # is summed as one region alone would be.
    terms = [np.ascontiguousarray(np.moveaxis(image[batch, :, yy, xx] * np.where(valid, wt, 0.0)[..., None], -1, 1))
             for yy, xx, wt in corners]
    if mode == "avg":
        return sum(terms).sum(axis=(3, 5)) / max(gh * gw, 1)
    return np.max(np.maximum.reduce(terms), axis=(3, 5))


@register_op
class RoiAlign(Op):
    """Pool each region of interest to output_height × output_width bins by averaging (or
    taking the max of) bilinear samples on a regular grid inside each bin."""

    name = "RoiAlign"

    def from_onnx(self, node):
        a = node.attrs
        return {"mode": a.get("mode", "avg"), "output_height": int(a.get("output_height", 1)),
                "output_width": int(a.get("output_width", 1)), "sampling_ratio": int(a.get("sampling_ratio", 0)),
                "spatial_scale": float(a.get("spatial_scale", 1.0)),
                "half_pixel": a.get("coordinate_transformation_mode", "half_pixel") == "half_pixel"}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x, rois = inputs[0], inputs[1]
        return Shape(x.dtype, (rois.lens[0], x.lens[1], attrs["output_height"], attrs["output_width"]))

    def compute(self, attrs, x, rois, batch_indices):
        image = widen(x).astype(np.float64)
        c, h, w = image.shape[1:]
        oh, ow = attrs["output_height"], attrs["output_width"]
        shift = 0.5 if attrs["half_pixel"] else 0.0
        x1, y1, x2, y2 = (widen(rois).astype(np.float64) * attrs["spatial_scale"] - shift).T
        rw, rh = x2 - x1, y2 - y1
        if not attrs["half_pixel"]:
            rw, rh = np.maximum(rw, 1.0), np.maximum(rh, 1.0)
        grid_h = np.full(len(rh), attrs["sampling_ratio"]) if attrs["sampling_ratio"] else np.ceil(rh / oh).astype(np.int64)
        grid_w = np.full(len(rw), attrs["sampling_ratio"]) if attrs["sampling_ratio"] else np.ceil(rw / ow).astype(np.int64)
        boxes = (x1, y1, rw / ow, rh / oh, batch_indices.astype(np.int64))
        out = np.zeros((len(rh), c, oh, ow))
        # Regions with the same sampling grid are pooled together, a bounded number at a time.
        for gh, gw in sorted(set(zip(grid_h.tolist(), grid_w.tolist()))):
            members = np.flatnonzero((grid_h == gh) & (grid_w == gw))
            step = max(1, _POOL_ELEMENTS // max(c * oh * max(gh, 1) * ow * max(gw, 1), 1))
            for k in range(0, len(members), step):
                part = members[k:k + step]
                out[part] = _pool_regions(image, [b[part] for b in boxes], gh, gw, (oh, ow), attrs["mode"])
        return result(out, x.dtype)
