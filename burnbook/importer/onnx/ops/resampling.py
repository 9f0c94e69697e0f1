"""Resampling, Resize and GridSample: emitters of the operator table (`table`), each
one call of its `runtime.resampling` helper with the ONNX attributes that
differ from the defaults."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..args import attr_text, f32, float_input, inp
from ..graph import Graph
from ..lowering import Lowering, literal, quote
from ..table import op


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
        value = attr_text(a, key, default)
        if value not in allowed:
            problems.append(f"Resize {key}={value!r} (ONNX defines {', '.join(allowed)})")
    mode = attr_text(a, "mode", "nearest")
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
    opts = {key: attr_text(a, key, default) for key, default in (
        ("coordinate_transformation_mode", "half_pixel"), ("nearest_mode", "round_prefer_floor"),
        ("keep_aspect_ratio_policy", "stretch"))}
    mode = attr_text(a, "mode", "nearest")
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
        extra.append(f"extrapolation_value={f32(a['extrapolation_value'])}")
    if int(a.get("antialias", 0)):
        extra.append("antialias=True")
    if "axes" in a:
        extra.append(f"axes={literal([int(v) for v in a['axes']])}")
    low.bind(node, f"onnx_ops.resize({', '.join(args + extra)})", "resize")


_GRID_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic", "cubic": "cubic"}


_GRID_PADDING = ("zeros", "border", "reflection")


def _check_grid_sample(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = float_input(graph, node) + float_input(graph, node, 1)
    default = "linear" if graph.opset >= 20 else "bilinear"
    mode, padding = attr_text(a, "mode", default), attr_text(a, "padding_mode", "zeros")
    if mode not in _GRID_MODES:
        problems.append(f"GridSample mode={mode!r} (ONNX defines {', '.join(_GRID_MODES)})")
    if padding not in _GRID_PADDING:
        problems.append(f"GridSample padding_mode={padding!r} (ONNX defines {', '.join(_GRID_PADDING)})")
    return problems


@op("GridSample", check=_check_grid_sample)
def _grid_sample(low: Lowering, node: Any, a: dict) -> None:
    mode = _GRID_MODES[attr_text(a, "mode", "linear")]
    padding = attr_text(a, "padding_mode", "zeros")
    corners = bool(a.get("align_corners", 0))
    low.bind(node, f"onnx_ops.grid_sample({low.var(node.input[0])}, {low.var(node.input[1])}, {quote(mode)}, "
             f"{quote(padding)}, {corners})", "grid_sample")
