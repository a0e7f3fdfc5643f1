"""Text-ish ops over integer token ids: TfIdfVectorizer."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .registry import Op, register_op


@register_op
class TfIdfVectorizer(Op):
    """Counts of the pool's n-grams (n from min to max gram length, tokens up to max_skip_count
    apart) per row, scattered to ngram_indexes; TF, IDF (weights where present) or TFIDF."""

    name = "TfIdfVectorizer"

    def from_onnx(self, node):
        a = node.attrs
        if "pool_strings" in a:
            node.unsupported("string n-grams")
        return {"min": int(a["min_gram_length"]), "max": int(a["max_gram_length"]), "skip": int(a["max_skip_count"]),
                "mode": a["mode"], "counts": [int(c) for c in a["ngram_counts"]],
                "indexes": [int(i) for i in a["ngram_indexes"]], "pool": [int(p) for p in a["pool_int64s"]],
                "weights": [float(w) for w in a.get("weights", [])]}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        width = max(attrs["indexes"]) + 1
        x = inputs[0]
        return Shape("float32", (width,) if x.ndim == 1 else (x.lens[0], width))

    def grams(self, attrs):
        """{n-gram tuple: output column}."""
        pool, starts = attrs["pool"], attrs["counts"] + [len(attrs["pool"])]
        table, k = {}, 0
        for n in range(1, len(attrs["counts"]) + 1):
            segment = pool[starts[n - 1]:starts[n]]
            for j in range(0, len(segment), n):
                table[tuple(segment[j:j + n])] = attrs["indexes"][k]
                k += 1
        return table

    def compute(self, attrs, x):
        table = self.grams(attrs)
        width = max(attrs["indexes"]) + 1
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        out = np.zeros((rows.shape[0], width), np.float32)
        for r, row in enumerate(rows):
            tokens = [int(t) for t in row]
            for n in range(attrs["min"], attrs["max"] + 1):
                # Unigrams are counted once; longer grams once per skip distance.
                for gap in range(1 if n == 1 else attrs["skip"] + 1):
                    step = gap + 1
                    for i in range(len(tokens) - (n - 1) * step):
                        gram = tuple(tokens[i + j * step] for j in range(n))
                        if gram in table:
                            out[r, table[gram]] += 1
        if attrs["mode"] == "IDF":
            out = np.minimum(out, 1)
        if attrs["mode"] in ("IDF", "TFIDF") and attrs["weights"]:
            weights = np.zeros(width, np.float32)
            for k, col in enumerate(attrs["indexes"]):
                weights[col] = attrs["weights"][k]
            out = out * weights
        return out.reshape(-1) if x.ndim == 1 else out
