"""The Stable Diffusion v1.5 denoising UNet (diffusers ``UNet2DConditionModel`` configuration).

block_out_channels (320, 640, 1280, 1280), 2 ResNet layers per down block (3 per up block, fed by
skip connections), cross-attention transformers (8 heads, context dim 768) in all but the
deepest down and the first up block, a cross-attention mid block, GroupNorm(32) everywhere.

Exported as PyTorch does at opset 17: GroupNorm = Reshape → InstanceNormalization → Reshape → Mul
→ Add, SiLU = x * Sigmoid(x), GELU in Erf form inside GEGLU, nearest Resize for upsampling.
The sinusoidal timestep embedding has no Sin/Cos here: it is a fixed [1000, 320] table (a
Constant, not a parameter) gathered by the int64 ``timestep`` input, which must be in [0, 1000).
Weights are ~3.4 GB in fp32, so the file uses ONNX external data.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from models.graph import Graph
from models.layers import T, conv

VERSION = 1
GROUPS = 32


class _UNet:
    def __init__(self, g: Graph, heads: int, context_dim: int, temb_dim: int):
        self.g, self.heads, self.context_dim, self.temb_dim = g, heads, context_dim, temb_dim

    def silu(self, x: str) -> str:
        return self.g.op("Mul", [x, self.g.op("Sigmoid", [x])])

    def group_norm(self, x: T, eps: float, name: str) -> T:
        g = self.g
        r = g.op("Reshape", [x.name, g.const(np.array([0, GROUPS, -1], np.int64), name="shape")])
        n = g.op("InstanceNormalization", [r, g.const(np.ones(GROUPS, np.float32), name="ones"),
                                           g.const(np.zeros(GROUPS, np.float32), name="zeros")], epsilon=eps)
        back = g.op("Reshape", [n, g.const(np.array([0, x.c, x.h, x.w], np.int64), name="shape")])
        gamma = g.param(f"{name}.weight", (x.c, 1, 1), "uniform", 0.9, 1.1)
        beta = g.param(f"{name}.bias", (x.c, 1, 1), "uniform", -0.05, 0.05)
        return T(g.op("Add", [g.op("Mul", [back, gamma]), beta]), x.c, x.h, x.w)

    def linear(self, x: str, cin: int, cout: int, name: str, bias: bool = True, gain: float = 1.0) -> str:
        y = self.g.op("MatMul", [x, self.g.param(f"{name}.weight", (cin, cout), "normal", math.sqrt(gain / cin))])
        if bias:
            y = self.g.op("Add", [y, self.g.param(f"{name}.bias", (cout,), "uniform", -0.02, 0.02)])
        return y

    def resnet(self, x: T, temb: str, cout: int, name: str) -> T:
        g = self.g
        h = T(self.silu(self.group_norm(x, 1e-5, f"{name}.norm1").name), x.c, x.h, x.w)
        h = conv(g, h, cout, 3, bias=True, name=f"{name}.conv1")
        t = self.linear(self.silu(temb), self.temb_dim, cout, f"{name}.time_emb_proj")
        t = g.op("Unsqueeze", [t, g.const(np.array([2, 3], np.int64), name="axes")])
        h = T(g.op("Add", [h.name, t]), cout, h.h, h.w)
        h = T(self.silu(self.group_norm(h, 1e-5, f"{name}.norm2").name), cout, h.h, h.w)
        # The trunk is a running sum: residual branches enter at reduced gain.
        h = conv(g, h, cout, 3, bias=True, gain=0.5, name=f"{name}.conv2")
        if x.c != cout:
            x = conv(g, x, cout, 1, pad=0, bias=True, gain=1.0, name=f"{name}.conv_shortcut")
        return T(g.op("Add", [x.name, h.name]), cout, h.h, h.w)

    def attention(self, x: str, ctx: str | None, c: int, name: str) -> str:
        g, heads = self.g, self.heads
        kv_in, kv_dim = (x, c) if ctx is None else (ctx, self.context_dim)
        split = lambda t, perm: g.op("Transpose", [g.op("Reshape", [t, g.const(  # noqa: E731
            np.array([0, -1, heads, c // heads], np.int64), name="shape")])], perm=perm)
        q = split(self.linear(x, c, c, f"{name}.to_q", bias=False), [0, 2, 1, 3])
        k = split(self.linear(kv_in, kv_dim, c, f"{name}.to_k", bias=False), [0, 2, 3, 1])
        v = split(self.linear(kv_in, kv_dim, c, f"{name}.to_v", bias=False), [0, 2, 1, 3])
        scores = g.op("Mul", [g.op("MatMul", [q, k]), g.const(np.float32((c // heads) ** -0.5), name="scale")])
        out = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        out = g.op("Reshape", [g.op("Transpose", [out], perm=[0, 2, 1, 3]),
                               g.const(np.array([0, -1, c], np.int64), name="shape")])
        return self.linear(out, c, c, f"{name}.to_out.0", gain=0.5)

    def layer_norm(self, x: str, c: int, name: str) -> str:
        s = self.g.param(f"{name}.weight", (c,), "uniform", 0.9, 1.1)
        b = self.g.param(f"{name}.bias", (c,), "uniform", -0.05, 0.05)
        return self.g.op("LayerNormalization", [x, s, b], axis=-1, epsilon=1e-5)

    def transformer(self, x: T, ctx: str, name: str) -> T:
        g, c = self.g, x.c
        h = self.group_norm(x, 1e-6, f"{name}.norm")
        h = conv(g, h, c, 1, pad=0, bias=True, gain=1.0, name=f"{name}.proj_in")
        tokens = g.op("Reshape", [g.op("Transpose", [h.name], perm=[0, 2, 3, 1]),
                                  g.const(np.array([0, x.h * x.w, c], np.int64), name="shape")])
        b = f"{name}.transformer_blocks.0"
        tokens = g.op("Add", [self.attention(self.layer_norm(tokens, c, f"{b}.norm1"), None, c, f"{b}.attn1"), tokens])
        tokens = g.op("Add", [self.attention(self.layer_norm(tokens, c, f"{b}.norm2"), ctx, c, f"{b}.attn2"), tokens])
        proj = self.linear(self.layer_norm(tokens, c, f"{b}.norm3"), c, 8 * c, f"{b}.ff.net.0.proj")
        hidden, gate = g.op("Split", [proj, g.const(np.array([4 * c, 4 * c], np.int64), name="split")], n_out=2, axis=-1)
        erf = g.op("Erf", [g.op("Div", [gate, g.const(np.float32(math.sqrt(2.0)), name="sqrt2")])])
        gelu = g.op("Mul", [g.op("Mul", [gate, g.op("Add", [erf, g.const(np.float32(1.0), name="one")])]),
                            g.const(np.float32(0.5), name="half")])
        ff = self.linear(g.op("Mul", [hidden, gelu]), 4 * c, c, f"{b}.ff.net.2", gain=0.5)
        tokens = g.op("Add", [ff, tokens])
        back = g.op("Transpose", [g.op("Reshape", [tokens, g.const(np.array([0, x.h, x.w, c], np.int64), name="shape")])],
                    perm=[0, 3, 1, 2])
        out = conv(g, T(back, c, x.h, x.w), c, 1, pad=0, bias=True, gain=0.5, name=f"{name}.proj_out")
        return T(g.op("Add", [out.name, x.name]), c, x.h, x.w)


def timestep_table(steps: int = 1000, dim: int = 320) -> np.ndarray:
    """diffusers Timesteps(dim, flip_sin_to_cos=True, downscale_freq_shift=0) for t = 0..steps-1."""
    half = dim // 2
    freqs = np.exp(-math.log(10000) * np.arange(half, dtype=np.float64) / half)
    args = np.arange(steps, dtype=np.float64)[:, None] * freqs[None, :]
    return np.concatenate([np.cos(args), np.sin(args)], axis=1).astype(np.float32)


def build(block_out_channels=(320, 640, 1280, 1280), layers_per_block: int = 2, heads: int = 8,
          cross_attention_dim: int = 768, latent_size: int = 64, in_channels: int = 4,
          context_len: int = 77, attention_blocks=(True, True, True, False)) -> Graph:
    g = Graph("unet", "Stable Diffusion v1.5 UNet2DConditionModel")
    temb_dim = block_out_channels[0] * 4
    m = _UNet(g, heads, cross_attention_dim, temb_dim)
    g.input("sample", TensorProto.FLOAT, ["batch", in_channels, latent_size, latent_size])
    g.input("timestep", TensorProto.INT64, ["batch"])
    ctx = g.input("encoder_hidden_states", TensorProto.FLOAT, ["batch", context_len, cross_attention_dim])
    c0 = block_out_channels[0]
    t = g.op("Gather", [g.const(timestep_table(1000, c0), name="time_proj_table"), "timestep"], axis=0)
    temb = m.linear(t, c0, temb_dim, "time_embedding.linear_1")
    temb = m.linear(m.silu(temb), temb_dim, temb_dim, "time_embedding.linear_2")

    x = conv(g, T("sample", in_channels, latent_size, latent_size), c0, 3, bias=True, gain=1.0, name="conv_in")
    skips = [x]
    for i, (c, attn) in enumerate(zip(block_out_channels, attention_blocks)):
        for j in range(layers_per_block):
            x = m.resnet(x, temb, c, f"down_blocks.{i}.resnets.{j}")
            if attn:
                x = m.transformer(x, ctx, f"down_blocks.{i}.attentions.{j}")
            skips.append(x)
        if i < len(block_out_channels) - 1:
            x = conv(g, x, c, 3, 2, pad=1, bias=True, gain=1.0, name=f"down_blocks.{i}.downsamplers.0.conv")
            skips.append(x)
    x = m.resnet(x, temb, x.c, "mid_block.resnets.0")
    x = m.transformer(x, ctx, "mid_block.attentions.0")
    x = m.resnet(x, temb, x.c, "mid_block.resnets.1")
    for i, (c, attn) in enumerate(zip(reversed(block_out_channels), reversed(attention_blocks))):
        for j in range(layers_per_block + 1):
            skip = skips.pop()
            x = T(g.op("Concat", [x.name, skip.name], axis=1), x.c + skip.c, x.h, x.w)
            x = m.resnet(x, temb, c, f"up_blocks.{i}.resnets.{j}")
            if attn:
                x = m.transformer(x, ctx, f"up_blocks.{i}.attentions.{j}")
        if i < len(block_out_channels) - 1:
            up = g.op("Resize", [x.name, "", g.const(np.array([1, 1, 2, 2], np.float32), name="scales")],
                      mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
            x = conv(g, T(up, x.c, 2 * x.h, 2 * x.w), x.c, 3, bias=True, name=f"up_blocks.{i}.upsamplers.0.conv")
    x = m.group_norm(x, 1e-5, "conv_norm_out")
    x = conv(g, T(m.silu(x.name), x.c, x.h, x.w), in_channels, 3, bias=True, gain=1.0, name="conv_out")
    g.output(x.name, "out_sample", shape=["batch", in_channels, latent_size, latent_size])
    return g
