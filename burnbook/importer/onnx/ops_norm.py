"""Normalisations, pooling beyond Max/Average, resizing, sampling and attention: emitters of the operator table (see `ops`).

Instance and group normalisation with constant scale and bias become an
`nn.GroupNorm` layer (instance norm is a group norm with one channel per
group); LpNormalization and the global pools are Tensor expressions; the rest
call the helpers of `runtime_norm`.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .codegen import Lowering, literal, quote
from .graph import Graph, elem_info
from .ops import inp, op
from .ops_nn import _auto_pad, _auto_pad_problems, _pads, _spatial_dims


def _text(a: dict, key: str, default: str) -> str:
    v = a.get(key, default)
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def _f32(v: float) -> str:
    return literal(np.float32(v))


def _float_input(graph: Graph, node: Any, i: int = 0) -> list[str]:
    v = graph.values.get(inp(node, i))
    if v is not None and v.kind not in (None, "Float"):
        return [f"{node.op_type} of a {v.kind} tensor {inp(node, i)!r} (it is defined for floats)"]
    return []


def _rank_at_least(graph: Graph, node: Any, rank: int) -> list[str]:
    v = graph.values.get(node.input[0])
    if v is not None and v.rank is not None and v.rank < rank:
        return [f"{node.op_type} of a rank-{v.rank} input (needs [N, C, ...], rank >= {rank})"]
    return []


# -- normalisations -----------------------------------------------------------------
def _group_norm_layer(low: Lowering, node: Any, groups: int, channels: int, eps: float, scale: np.ndarray,
                      bias: np.ndarray) -> None:
    cfg = f"nn.GroupNormConfig({groups}, {channels}, epsilon={_f32(eps)})"
    params = {"gamma": scale.reshape(-1), "beta": bias.reshape(-1)}
    name = low.layer("group_norm", "nn.GroupNorm", f"{cfg}.init(device, backend=B)", params)
    low.bind(node, f"self.{name}({low.var(node.input[0])})", f"{name}_out")


def _check_instance_norm(graph: Graph, node: Any, a: dict) -> list[str]:
    return _float_input(graph, node) + _rank_at_least(graph, node, 3)


@op("InstanceNormalization", check=_check_instance_norm)
def _instance_norm(low: Lowering, node: Any, a: dict) -> None:
    x, scale, bias = node.input[:3]
    eps = float(a.get("epsilon", 1e-5))
    s, b = low.const(scale), low.const(bias)
    if s is not None and b is not None and s.size == b.size:
        _group_norm_layer(low, node, s.size, s.size, eps, s, b)
        return
    low.bind(node, f"onnx_ops.instance_norm({low.var(x)}, {low.var(scale)}, {low.var(bias)}, {_f32(eps)})",
             "instance_norm")


# stash_type (opset 21): the ONNX element type the statistics are computed in,
# as the float types burnbook tensors can hold (bfloat16 has none)
_STASH = {1: "float32", 10: "float16", 11: "float64"}


def _stash(graph: Graph, a: dict) -> str | None:
    """The stash type's NumPy name; None before opset 21 (computed in x's type)."""
    return _STASH.get(int(a.get("stash_type", 1))) if graph.opset >= 21 else None


def _check_group_norm(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = _float_input(graph, node) + _rank_at_least(graph, node, 3)
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
    low.bind(node, f"onnx_ops.group_norm({low.var(x)}, {groups}, {_f32(eps)}, {low.var(scale)}, "
             f"{low.var(bias)}{flag})", "group_norm")


def _check_lp_norm(graph: Graph, node: Any, a: dict) -> list[str]:
    p = int(a.get("p", 2))
    return _float_input(graph, node) + ([] if p in (1, 2) else [f"LpNormalization p={p} (ONNX defines 1 and 2)"])


@op("LpNormalization", check=_check_lp_norm)
def _lp_norm(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    rank = low.brank(node.input[0])
    axis = int(a.get("axis", -1))
    axis = axis + rank if axis < 0 else axis
    low.bind(node, f"onnx_ops.lp_norm({x}, {axis}, {int(a.get('p', 2))})", "lp_norm")


@op("MeanVarianceNormalization", check=lambda g, n, a: _float_input(g, n))
def _mvn(low: Lowering, node: Any, a: dict) -> None:
    axes = [int(v) for v in a.get("axes", [0, 2, 3])]
    low.bind(node, f"onnx_ops.mean_variance_norm({low.var(node.input[0])}, {literal(axes)})", "mvn")


@op("RMSNormalization", check=lambda g, n, a: _float_input(g, n))
def _rms_norm(low: Lowering, node: Any, a: dict) -> None:
    x, scale = node.input[:2]
    axis = int(a.get("axis", -1))
    eps = float(a.get("epsilon", 1e-5))
    low.bind(node, f"onnx_ops.rms_norm({low.var(x)}, {low.var(scale)}, {axis}, {_f32(eps)})", "rms_norm")


def _check_lrn(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = _float_input(graph, node) + _rank_at_least(graph, node, 3)
    if int(a.get("size", 0)) < 1:
        problems.append(f"LRN size={a.get('size')} (must be >= 1)")
    return problems


@op("LRN", check=_check_lrn)
def _lrn(low: Lowering, node: Any, a: dict) -> None:
    args = (f"{int(a['size'])}, {_f32(a.get('alpha', 1e-4))}, {_f32(a.get('beta', 0.75))}, "
            f"{_f32(a.get('bias', 1.0))}")
    low.bind(node, f"onnx_ops.lrn({low.var(node.input[0])}, {args})", "lrn")


# -- pooling ---------------------------------------------------------------------------
def _check_global(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = _rank_at_least(graph, node, 3)
    if node.op_type == "GlobalLpPool":
        problems += _float_input(graph, node)
    return problems


@op("GlobalMaxPool", "GlobalLpPool", check=_check_global)
def _global_pool(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    spatial = range(2, low.rank(node.input[0]))
    if node.op_type == "GlobalMaxPool":
        low.bind(node, x + "".join(f".max_dim({d})" for d in spatial), "global_max_pool")
        return
    p = float(a.get("p", 2))
    powered = f"({x} * {x})" if p == 2 else f"{x}.abs().powf_scalar({literal(p)})"
    summed = powered + "".join(f".sum_dim({d})" for d in spatial)
    low.bind(node, f"{summed}.sqrt()" if p == 2 else f"{summed}.powf_scalar({literal(1.0 / p)})",
             "global_lp_pool")


def _check_lp_pool(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = _auto_pad_problems(node, a) + _float_input(graph, node)
    if "kernel_shape" not in a:
        problems.append("LpPool without kernel_shape")
    if _auto_pad(a) in ("SAME_UPPER", "SAME_LOWER") and _spatial_dims(graph, node.input[0]) is None:
        problems.append(f"LpPool auto_pad={_auto_pad(a)} without static spatial input dims")
    return problems


@op("LpPool", check=_check_lp_pool)
def _lp_pool(low: Lowering, node: Any, a: dict) -> None:
    kernel = [int(v) for v in a["kernel_shape"]]
    n = len(kernel)
    strides = [int(v) for v in a.get("strides", [1] * n)]
    dil = [int(v) for v in a.get("dilations", [1] * n)]
    pads = _pads(low, node, a, kernel, strides, dil)
    p = float(a.get("p", 2))
    ceil = bool(a.get("ceil_mode", 0))
    low.bind(node, f"onnx_ops.lp_pool({low.var(node.input[0])}, {literal(p)}, {literal(kernel)}, "
             f"{literal(strides)}, {literal(pads)}, {literal(dil)}, {ceil})", "lp_pool")


# -- Resize and GridSample --------------------------------------------------------------
_RESIZE_MODES = ("nearest", "linear", "cubic")
_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_ASPECT = ("stretch", "not_larger", "not_smaller")


def _check_resize(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = []
    for key, default, allowed in (("mode", "nearest", _RESIZE_MODES),
                                  ("coordinate_transformation_mode", "half_pixel", _COORD_MODES),
                                  ("nearest_mode", "round_prefer_floor", _NEAREST_MODES),
                                  ("keep_aspect_ratio_policy", "stretch", _ASPECT)):
        value = _text(a, key, default)
        if value not in allowed:
            problems.append(f"Resize {key}={value!r} (ONNX defines {', '.join(allowed)})")
    mode = _text(a, "mode", "nearest")
    x = graph.values.get(node.input[0])
    if mode != "nearest" and x is not None and x.kind not in (None, "Float"):
        problems.append(f"Resize mode={mode!r} of a {x.kind} tensor (burnbook interpolates floats only)")
    if not inp(node, 2) and not inp(node, 3):
        problems.append("Resize without scales or sizes")
    return problems


@op("Resize", check=_check_resize)
def _resize(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])

    def source(i: int, kind: type) -> str:
        name = inp(node, i)
        if not name:
            return "None"
        arr = low.const(name)
        if arr is None:
            return low.var(name)
        return literal([kind(v) for v in arr.reshape(-1)])

    # (models below opset 13 were upgraded on loading, Resize-10's (X, scales) included)
    roi, scales, sizes = source(1, float), source(2, float), source(3, int)
    opts = {key: _text(a, key, default) for key, default in (
        ("coordinate_transformation_mode", "half_pixel"), ("nearest_mode", "round_prefer_floor"),
        ("keep_aspect_ratio_policy", "stretch"))}
    mode = _text(a, "mode", "nearest")
    args = [x, roi, scales, sizes, quote(mode)]
    defaults = {"coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
                "keep_aspect_ratio_policy": "stretch"}
    if mode != "nearest":  # nearest_mode only matters to nearest, cubic_coeff_a only to cubic
        opts.pop("nearest_mode")
    extra = [f"{k}={quote(v)}" for k, v in opts.items() if v != defaults[k]]
    if mode == "cubic" and float(a.get("cubic_coeff_a", -0.75)) != -0.75:
        extra.append(f"cubic_coeff_a={literal(float(np.float32(a['cubic_coeff_a'])))}")
    if int(a.get("exclude_outside", 0)):
        extra.append("exclude_outside=True")
    if float(a.get("extrapolation_value", 0.0)) != 0.0:
        extra.append(f"extrapolation_value={_f32(a['extrapolation_value'])}")
    if int(a.get("antialias", 0)):
        extra.append("antialias=True")
    if "axes" in a:
        extra.append(f"axes={literal([int(v) for v in a['axes']])}")
    low.bind(node, f"onnx_ops.resize({', '.join(args + extra)})", "resize")


_GRID_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic", "cubic": "cubic"}
_GRID_PADDING = ("zeros", "border", "reflection")


def _check_grid_sample(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = _float_input(graph, node) + _float_input(graph, node, 1)
    default = "linear" if graph.opset >= 20 else "bilinear"
    mode, padding = _text(a, "mode", default), _text(a, "padding_mode", "zeros")
    if mode not in _GRID_MODES:
        problems.append(f"GridSample mode={mode!r} (ONNX defines {', '.join(_GRID_MODES)})")
    if padding not in _GRID_PADDING:
        problems.append(f"GridSample padding_mode={padding!r} (ONNX defines {', '.join(_GRID_PADDING)})")
    return problems


@op("GridSample", check=_check_grid_sample)
def _grid_sample(low: Lowering, node: Any, a: dict) -> None:
    mode = _GRID_MODES[_text(a, "mode", "linear")]
    padding = _text(a, "padding_mode", "zeros")
    corners = bool(a.get("align_corners", 0))
    low.bind(node, f"onnx_ops.grid_sample({low.var(node.input[0])}, {low.var(node.input[1])}, {quote(mode)}, "
             f"{quote(padding)}, {corners})", "grid_sample")


# -- Einsum and MatMulInteger -------------------------------------------------------------
# terms of letters with at most one ellipsis each, joined by commas, then an optional output term
_EQUATION = re.compile(r"^[A-Za-z ]*(\.\.\.[A-Za-z ]*)?(,[A-Za-z ]*(\.\.\.[A-Za-z ]*)?)*(->[A-Za-z ]*(\.\.\.[A-Za-z ]*)?)?$")


def _check_einsum(graph: Graph, node: Any, a: dict) -> list[str]:
    eq = _text(a, "equation", "")
    if not eq or not re.fullmatch(r"[A-Za-z,. ]*(->[A-Za-z. ]*)?", eq) or eq.replace("...", "").count(".") \
            or not _EQUATION.match(eq.replace(" ", "")):
        return [f"Einsum equation {eq!r} is not of the form 'ab,bc->ac' (letters, ',', '...', '->')"]
    lhs = eq.replace(" ", "").split("->")[0].split(",")
    if len(lhs) != len(node.input):
        return [f"Einsum equation {eq!r} names {len(lhs)} operands, the node has {len(node.input)}"]
    kinds = {graph.values[n].kind for n in node.input if n in graph.values}
    if len(kinds) > 1 or "Bool" in kinds:
        return [f"Einsum of element kinds {sorted(k for k in kinds if k)} (one numeric kind is needed)"]
    return []


@op("Einsum", check=_check_einsum)
def _einsum(low: Lowering, node: Any, a: dict) -> None:
    eq = _text(a, "equation", "").replace(" ", "")
    operands = ", ".join(low.var(n) for n in node.input)
    ranks = [low.rank(n) for n in node.input]
    low.bind(node, f"onnx_ops.einsum({quote(eq)}, {operands}, ranks={literal(ranks)})", "einsum")


@op("MatMulInteger")
def _matmul_integer(low: Lowering, node: Any, a: dict) -> None:
    args = [low.var(node.input[0]), low.var(node.input[1])]
    for i in (2, 3):
        args.append(low.var(inp(node, i)) if inp(node, i) else "None")
    low.bind(node, f"onnx_ops.matmul_integer({', '.join(args)})", "matmul_integer")


# -- Attention -------------------------------------------------------------------------------
def _check_attention(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = _float_input(graph, node)
    q = graph.values.get(node.input[0])
    if q is not None and q.rank == 3 and ("q_num_heads" not in a or "kv_num_heads" not in a):
        problems.append("Attention of 3-D inputs without q_num_heads and kv_num_heads")
    if q is not None and q.rank not in (None, 3, 4):
        problems.append(f"Attention of rank-{q.rank} inputs (ONNX defines 3-D and 4-D)")
    mode = int(a.get("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        problems.append(f"Attention qk_matmul_output_mode={mode} (ONNX defines 0 to 3)")
    if bool(inp(node, 4)) != bool(inp(node, 5)):
        problems.append("Attention with only one of past_key and past_value")
    return problems


@op("Attention", check=_check_attention)
def _attention(low: Lowering, node: Any, a: dict) -> None:
    args = [low.var(node.input[i]) for i in range(3)]
    for i in range(3, 7):
        args.append(low.var(inp(node, i)) if inp(node, i) else "None")
    while args[-1] == "None":
        args.pop()
    if "scale" in a:
        args.append(f"scale={_f32(a['scale'])}")
    if int(a.get("is_causal", 0)):
        args.append("is_causal=True")
    for key in ("q_num_heads", "kv_num_heads"):
        if key in a:
            args.append(f"{key}={int(a[key])}")
    if float(a.get("softcap", 0.0)) > 0:
        args.append(f"softcap={_f32(a['softcap'])}")
    if int(a.get("qk_matmul_output_mode", 0)):
        args.append(f"qk_matmul_output_mode={int(a['qk_matmul_output_mode'])}")
    for key in ("left_window_size", "right_window_size"):
        if int(a.get(key, -1)) != -1:
            args.append(f"{key}={int(a[key])}")
    count = max(i + 1 for i, o in enumerate(node.output) if o)
    if count < 4:
        args.append(f"outputs={count}")
    call = f"onnx_ops.attention({', '.join(args)})"
    if count == 1:
        low.bind(node, call, "attention")
    else:
        low.bind_many(node, call, count, "attention")
