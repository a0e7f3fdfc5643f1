"""Builders, one per architecture family: ``name -> Builder``.

A builder function takes keyword hyperparameters (a manifest row's ``options``) and returns a
``models.graph.Graph``. ``version`` goes into the cache key: bump it whenever a builder's output
changes, so stale cached files are never reused.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from models.builders import (agent, bert, densenet, dlrm, dpn, inception, mobilenet, nasnet, resnet, taau,
                             unet, vgg, wlang)
from models.graph import Graph


@dataclass(frozen=True)
class Builder:
    name: str
    fn: Callable[..., Graph]
    version: int
    summary: str

    def options(self) -> set[str]:
        return set(inspect.signature(self.fn).parameters)

    def __call__(self, **options) -> Graph:
        return self.fn(**options)


def _resnet(variant: str = "v1", **options) -> Graph:
    return (resnet.build_v2 if variant == "v2" else resnet.build_v1)(**options)


def _inception(version: int = 3, **options) -> Graph:
    return (inception.build_v4 if version == 4 else inception.build_v3)(**options)


def _with_family_options(variants: list[Callable], dispatch: Callable) -> Callable:
    """``dispatch`` (which picks one of ``variants`` by its first keyword) with a signature
    that lists its own selector and every variant's keywords, so that manifest options are
    validated against them."""
    params = list(inspect.signature(dispatch).parameters.values())[:1] + [
        p for variant in variants for p in inspect.signature(variant).parameters.values()]
    unique = {p.name: p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params}
    dispatch.__signature__ = inspect.Signature(list(unique.values()))
    return dispatch


BUILDERS: dict[str, Builder] = {b.name: b for b in [
    Builder("resnet", _with_family_options([resnet.build_v1, resnet.build_v2], _resnet), resnet.VERSION,
            "ResNet v1.5 / ResNeXt (torchvision), ResNet v2 (slim)"),
    Builder("densenet", densenet.build, densenet.VERSION, "DenseNet (torchvision)"),
    Builder("inception", _with_family_options([inception.build_v3, inception.build_v4], _inception), inception.VERSION,
            "Inception v3 (torchvision), v4 (Cadene / slim)"),
    Builder("mobilenet", mobilenet.build, mobilenet.VERSION, "MobileNet v1 (slim)"),
    Builder("nasnet", nasnet.build, nasnet.VERSION, "NASNet-A (slim)"),
    Builder("vgg", vgg.build, vgg.VERSION, "VGG (slim)"),
    Builder("dpn", dpn.build, dpn.VERSION, "Dual Path Networks (Cadene)"),
    Builder("bert", bert.build, bert.VERSION, "BERT classifier (PyTorch or TF export patterns)"),
    Builder("wlang", wlang.build, wlang.VERSION, "word language model (LSTM/GRU)"),
    Builder("dlrm", dlrm.build, dlrm.VERSION, "DLRM (MLPerf Criteo Terabyte)"),
    Builder("agent", agent.build, agent.VERSION, "actor-critic RL agent"),
    Builder("taau", taau.build, taau.VERSION, "TAAU frame downsampling"),
    Builder("unet", unet.build, unet.VERSION, "Stable Diffusion v1.5 UNet"),
]}
