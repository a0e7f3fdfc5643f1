"""DenseNet-121/169/201 (torchvision layout): BN-ReLU-Conv dense layers, transitions that halve
channels and resolution, a final BN and a linear head."""
from __future__ import annotations

from models.graph import Graph
from models.layers import avgpool, bn, concat, conv, conv_bn_relu, global_pool_flat, linear, maxpool, nchw_input, relu

VERSION = 1
CONFIGS = {121: (6, 12, 24, 16), 169: (6, 12, 32, 32), 201: (6, 12, 48, 32)}


def build(depth: int = 121, growth_rate: int = 32, bn_size: int = 4, num_init_features: int = 64,
          num_classes: int = 1000, image_size: int = 224, blocks: list | None = None) -> Graph:
    g = Graph(f"densenet{depth}", "DenseNet, torchvision layout")
    x = nchw_input(g, image_size)
    x = conv_bn_relu(g, x, num_init_features, 7, 2, pad=3, name="features.conv0")
    x = maxpool(g, x, 3, 2, pad=1)
    cfg = blocks or CONFIGS[depth]
    for i, n_layers in enumerate(cfg):
        feats = [x]
        for j in range(n_layers):
            name = f"features.denseblock{i + 1}.denselayer{j + 1}"
            inp = feats[0] if len(feats) == 1 else concat(g, feats)
            y = relu(g, bn(g, inp, name=f"{name}.norm1"))
            y = relu(g, bn(g, conv(g, y, bn_size * growth_rate, 1, name=f"{name}.conv1"), name=f"{name}.norm2"))
            feats.append(conv(g, y, growth_rate, 3, name=f"{name}.conv2"))
        x = concat(g, feats)
        if i != len(cfg) - 1:
            name = f"features.transition{i + 1}"
            y = relu(g, bn(g, x, name=f"{name}.norm"))
            y = conv(g, y, x.c // 2, 1, name=f"{name}.conv")
            x = avgpool(g, y, 2, 2)
    x = relu(g, bn(g, x, name="features.norm5"))
    logits = linear(g, global_pool_flat(g, x), x.c, num_classes, name="classifier")
    g.output(logits, "output", shape=["batch", num_classes])
    return g
