"""Normalisations: BatchNormalization, LayerNormalization,
InstanceNormalization, GroupNormalization, LpNormalization,
MeanVarianceNormalization, RMSNormalization and LRN: emitters of the
operator table (`table`).

With constant statistics, scale and bias, BatchNorm, LayerNorm (over the
last dim) and instance and group norm become `nn.BatchNorm`, `nn.LayerNorm`
and `nn.GroupNorm` layers (instance norm is a group norm with one channel
per group); the rest call the helpers of `runtime.norm`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..args import f32, float_input, inp, rank_at_least
from ..graph import Graph, elem_info
from ..lowering import Lowering, literal, quote
from ..table import op


@op("BatchNormalization")
def _batchnorm(low: Lowering, node: Any, a: dict) -> None:
    x, scale, bias, mean, var = node.input[:5]
    eps = float(a.get("epsilon", 1e-5))
    momentum = float(a.get("momentum", 0.9))
    consts = [low.const(n) for n in (scale, bias, mean, var)]
    if int(a.get("training_mode", 0)):
        args = ", ".join(low.var(n) for n in (x, scale, bias, mean, var))
        low.bind_many(node, f"onnx_ops.batch_norm_train({args}, {literal(np.float32(eps))}, "
                      f"{literal(np.float32(momentum))})", 3, "batch_norm")
        return
    if all(c is not None for c in consts):
        s, b, m, v = consts
        params = {"gamma": s, "beta": b, "running_mean": m, "running_var": v}
        # ONNX's momentum weighs the running value, PyTorch's (and burnbook's) the new one
        cfg = f"nn.BatchNormConfig({s.shape[0]}, epsilon={literal(np.float32(eps))}, " \
              f"momentum={literal(round(1.0 - momentum, 6))})"
        name = low.layer("norm", "nn.BatchNorm", f"{cfg}.init(device, backend=B)", params)
        low.bind(node, f"self.{name}({low.var(x)})", f"{name}_out")
        return
    rank = low.brank(x)
    shape = literal([1, -1] + [1] * (rank - 2))
    xe = low.var(x)
    expr = (f"({xe} - {low.var(mean)}.reshape({shape})) / ({low.var(var)}.reshape({shape}) + "
            f"{literal(np.float32(eps))}).sqrt() * {low.var(scale)}.reshape({shape}) + "
            f"{low.var(bias)}.reshape({shape})")
    low.bind(node, expr, "batch_norm")


@op("LayerNormalization")
def _layernorm(low: Lowering, node: Any, a: dict) -> None:
    x, scale, bias = node.input[0], inp(node, 1), inp(node, 2)
    axis = int(a.get("axis", -1))
    eps = float(a.get("epsilon", 1e-5))
    rank = low.rank(x)
    s, b = low.const(scale), low.const(bias)
    extra = sum(1 for o in node.output[1:] if o)
    if (axis in (-1, rank - 1) and s is not None and s.ndim == 1 and (not bias or (b is not None and b.ndim == 1))
            and extra == 0):
        params = {"gamma": s, "beta": b if b is not None else np.zeros_like(s)}
        cfg = f"nn.LayerNormConfig({s.shape[0]}, epsilon={literal(np.float32(eps))})"
        name = low.layer("layer_norm", "nn.LayerNorm", f"{cfg}.init(device, backend=B)", params)
        low.bind(node, f"self.{name}({low.var(x)})", f"{name}_out")
        return
    sc = low.var(scale) if scale else "None"
    bi = low.var(bias) if bias else "None"
    call = f"onnx_ops.layer_norm({low.var(x)}, {axis}, {literal(np.float32(eps))}, {sc}, {bi})"
    low.bind_many(node, call, 3, "layer_norm")


def _group_norm_layer(low: Lowering, node: Any, groups: int, channels: int, eps: float, scale: np.ndarray,
                      bias: np.ndarray) -> None:
    cfg = f"nn.GroupNormConfig({groups}, {channels}, epsilon={f32(eps)})"
    params = {"gamma": scale.reshape(-1), "beta": bias.reshape(-1)}
    name = low.layer("group_norm", "nn.GroupNorm", f"{cfg}.init(device, backend=B)", params)
    low.bind(node, f"self.{name}({low.var(node.input[0])})", f"{name}_out")


def _check_instance_norm(graph: Graph, node: Any, a: dict) -> list[str]:
    return float_input(graph, node) + rank_at_least(graph, node, 3)


@op("InstanceNormalization", check=_check_instance_norm)
def _instance_norm(low: Lowering, node: Any, a: dict) -> None:
    x, scale, bias = node.input[:3]
    eps = float(a.get("epsilon", 1e-5))
    s, b = low.const(scale), low.const(bias)
    if s is not None and b is not None and s.size == b.size:
        _group_norm_layer(low, node, s.size, s.size, eps, s, b)
        return
    low.bind(node, f"onnx_ops.instance_norm({low.var(x)}, {low.var(scale)}, {low.var(bias)}, {f32(eps)})",
             "instance_norm")


# stash_type (opset 21): the ONNX element type the statistics are computed in,
# as the float types burnbook tensors can hold (bfloat16 has none)
_STASH = {1: "float32", 10: "float16", 11: "float64"}


def _stash(graph: Graph, a: dict) -> str | None:
    """The stash type's NumPy name; None before opset 21 (computed in x's type)."""
    return _STASH.get(int(a.get("stash_type", 1))) if graph.opset >= 21 else None


def _check_group_norm(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = float_input(graph, node) + rank_at_least(graph, node, 3)
    if int(a.get("num_groups", 0)) < 1:
        problems.append(f"GroupNormalization num_groups={a.get('num_groups')} (must be >= 1)")
    stash = int(a.get("stash_type", 1))
    if graph.opset >= 21 and stash not in _STASH:
        info = elem_info(stash)
        name = info[1] if info is not None else "no float type"
        problems.append(f"GroupNormalization stash_type={stash} ({name}): the statistics can be computed in "
                        f"float32 (1), float16 (10) or float64 (11) only")
    return problems


@op("GroupNormalization", check=_check_group_norm)
def _group_norm(low: Lowering, node: Any, a: dict) -> None:
    x, scale, bias = node.input[:3]
    groups = int(a["num_groups"])
    eps = float(a.get("epsilon", 1e-5))
    # opset 18 has one scale and bias per group, opset 21 one per channel
    per_channel = low.graph.opset >= 21
    s, b = low.const(scale), low.const(bias)
    xs = low.value(x).shape
    channels = xs[1] if xs is not None and isinstance(xs[1], int) else None
    # the layer computes in x's type: only where that is the stash type
    stash = _stash(low.graph, a)
    plain = stash is None or stash == low.value(x).dtype == "float32"
    if plain and s is not None and b is not None and channels is not None and channels % groups == 0:
        if not per_channel:
            s, b = np.repeat(s.reshape(-1), channels // groups), np.repeat(b.reshape(-1), channels // groups)
        if s.size == channels and b.size == channels:
            _group_norm_layer(low, node, groups, channels, eps, s, b)
            return
    flag = ("" if per_channel else ", per_channel=False") + ("" if stash is None else f", stash={quote(stash)}")
    low.bind(node, f"onnx_ops.group_norm({low.var(x)}, {groups}, {f32(eps)}, {low.var(scale)}, "
             f"{low.var(bias)}{flag})", "group_norm")


def _check_lp_norm(graph: Graph, node: Any, a: dict) -> list[str]:
    p = int(a.get("p", 2))
    return float_input(graph, node) + ([] if p in (1, 2) else [f"LpNormalization p={p} (ONNX defines 1 and 2)"])


@op("LpNormalization", check=_check_lp_norm)
def _lp_norm(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    rank = low.brank(node.input[0])
    axis = int(a.get("axis", -1))
    axis = axis + rank if axis < 0 else axis
    low.bind(node, f"onnx_ops.lp_norm({x}, {axis}, {int(a.get('p', 2))})", "lp_norm")


@op("MeanVarianceNormalization", check=lambda g, n, a: float_input(g, n))
def _mvn(low: Lowering, node: Any, a: dict) -> None:
    axes = [int(v) for v in a.get("axes", [0, 2, 3])]
    low.bind(node, f"onnx_ops.mean_variance_norm({low.var(node.input[0])}, {literal(axes)})", "mvn")


@op("RMSNormalization", check=lambda g, n, a: float_input(g, n))
def _rms_norm(low: Lowering, node: Any, a: dict) -> None:
    x, scale = node.input[:2]
    axis = int(a.get("axis", -1))
    eps = float(a.get("epsilon", 1e-5))
    low.bind(node, f"onnx_ops.rms_norm({low.var(x)}, {low.var(scale)}, {axis}, {f32(eps)})", "rms_norm")


def _check_lrn(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = float_input(graph, node) + rank_at_least(graph, node, 3)
    if int(a.get("size", 0)) < 1:
        problems.append(f"LRN size={a.get('size')} (must be >= 1)")
    return problems


@op("LRN", check=_check_lrn)
def _lrn(low: Lowering, node: Any, a: dict) -> None:
    args = (f"{int(a['size'])}, {f32(a.get('alpha', 1e-4))}, {f32(a.get('beta', 0.75))}, "
            f"{f32(a.get('bias', 1.0))}")
    low.bind(node, f"onnx_ops.lrn({low.var(node.input[0])}, {args})", "lrn")
