"""NonMaxSuppression's greedy selection as one numba-compiled loop (imported only where numba
is): the reference's IoU arithmetic in float64, in the same order, so the same boxes are kept."""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def greedy_keep(boxes, order, limit, iou_limit):
    """Candidates in ``order`` kept while each one's IoU with every kept box is ≤ ``iou_limit``
    (0 where the union is empty), at most ``limit`` of them."""
    kept = np.empty(min(limit, order.shape[0]), np.int64)
    count = 0
    for i in order:
        if count >= limit:
            break
        keep = True
        for k in range(count):
            box = boxes[kept[k]]
            top, left = max(box[0], boxes[i, 0]), max(box[1], boxes[i, 1])
            bottom, right = min(box[2], boxes[i, 2]), min(box[3], boxes[i, 3])
            inter = max(0.0, bottom - top) * max(0.0, right - left)
            union = (box[2] - box[0]) * (box[3] - box[1]) + \
                (boxes[i, 2] - boxes[i, 0]) * (boxes[i, 3] - boxes[i, 1]) - inter
            iou = inter / union if union > 0 else 0.0
            if not iou <= iou_limit:
                keep = False
                break
        if keep:
            kept[count] = i
            count += 1
    return kept[:count]
