"""Convolution and pooling, the operators that slide a window: Conv,
ConvTranspose, MaxPool, AveragePool, LpPool and the global pools:
emitters of the operator table (`table`).

A Conv or ConvTranspose with constant weights becomes an `nn` layer; the
pools become `F.max_pool2d`-style calls when burnbook's own pools take the
window, else a `runtime.pooling` helper (asymmetric pads, dilations, ceil
mode, any number of spatial dims).
"""

from __future__ import annotations

from typing import Any

from ..args import float_input, inp, rank_at_least
from ..graph import Graph
from ..lowering import Lowering, literal
from ..table import op


# -- windows: kernel, strides, pads -----------------------------------------------
def _spatial(graph: Graph, node: Any, a: dict) -> int | None:
    if "kernel_shape" in a:
        return len(a["kernel_shape"])
    w = graph.values.get(inp(node, 1))
    if w is not None and w.rank:
        return w.rank - 2
    x = graph.values.get(node.input[0])
    return None if x is None or x.rank is None else x.rank - 2


_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _auto_pad(a: dict) -> str:
    v = a.get("auto_pad", b"NOTSET")
    return v.decode(errors="replace") if isinstance(v, bytes) else v


def _auto_pad_problems(node: Any, a: dict) -> list[str]:
    mode = _auto_pad(a)
    return [] if mode in _AUTO_PADS else [f"{node.op_type} auto_pad={mode!r} (ONNX defines {', '.join(_AUTO_PADS)})"]


def _pads(low: Lowering, node: Any, a: dict, kernel: list, strides: list, dilations: list) -> list[int]:
    """ONNX pads (begins then ends), resolving auto_pad from the static input shape."""
    n = len(kernel)
    mode = _auto_pad(a)
    if mode in ("NOTSET", "VALID"):
        return [0] * (2 * n) if mode == "VALID" else [int(p) for p in a.get("pads", [0] * (2 * n))]
    dims = _spatial_dims(low.graph, node.input[0])
    begins, ends = [], []
    for size, k, s, d in zip(dims, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + d * (k - 1) + 1 - size)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return begins + ends


def _spatial_dims(graph: Graph, name: str) -> list[int] | None:
    """The spatial dims (all but batch and channels) of `[N, C, ...]` when
    each is known before the model runs: the SAME_* padding and ConvTranspose
    `output_shape` rules need only these, so a dynamic batch is fine."""
    v = graph.values.get(name)
    if v is None or v.shape is None or any(not isinstance(d, int) for d in v.shape[2:]):
        return None
    return [int(d) for d in v.shape[2:]]


def _kernel(graph: Graph, node: Any, a: dict) -> list[int | None]:
    """The kernel size: `kernel_shape` when given, else the weight's dims
    after the first two (None where symbolic; only the SAME_* and
    `output_shape` rules and the layer configs, whose weights are constants,
    need them)."""
    if "kernel_shape" in a:
        return [int(v) for v in a["kernel_shape"]]
    n = _spatial(graph, node, a) or 0
    w = graph.values.get(inp(node, 1))
    dims = list(w.shape[2:]) if w is not None and w.shape is not None else [None] * n
    return [int(d) if isinstance(d, int) else None for d in dims]


def _check_conv(graph: Graph, node: Any, a: dict) -> list[str]:
    n = _spatial(graph, node, a)
    problems = _auto_pad_problems(node, a)
    if n not in (1, 2):
        problems.append(f"{node.op_type} with {n} spatial dims (1-D and 2-D are supported)")
    rule = f"auto_pad={_auto_pad(a)}" if _auto_pad(a) in ("SAME_UPPER", "SAME_LOWER") else (
        "output_shape" if "output_shape" in a else None)
    if rule and "kernel_shape" not in a and None in _kernel(graph, node, a):
        problems.append(f"{node.op_type} {rule} needs the kernel size: give kernel_shape, or a weight "
                        f"{inp(node, 1)!r} whose kernel dims are known before the model runs")
    if _auto_pad(a) in ("SAME_UPPER", "SAME_LOWER") and _spatial_dims(graph, node.input[0]) is None:
        problems.append(f"{node.op_type} auto_pad={_auto_pad(a)} without static spatial input dims")
    if node.op_type == "ConvTranspose" and "output_shape" in a and _spatial_dims(graph, node.input[0]) is None:
        problems.append("ConvTranspose output_shape without static spatial input dims")
    return problems


# -- convolution ------------------------------------------------------------------
@op("Conv", check=_check_conv)
def _conv(low: Lowering, node: Any, a: dict) -> None:
    wname, bname = node.input[1], inp(node, 2)
    kernel = _kernel(low.graph, node, a)
    n = len(kernel)
    strides = [int(v) for v in a.get("strides", [1] * n)]
    dil = [int(v) for v in a.get("dilations", [1] * n)]
    groups = int(a.get("group", 1))
    pads = _pads(low, node, a, kernel, strides, dil)
    sym = pads[:n] == pads[n:]
    x = low.var(node.input[0])
    if not sym:
        x = f"onnx_ops.pad({x}, {literal(pads)})"
    w, b = low.const(wname), low.const(bname)
    if w is not None and (not bname or b is not None):
        c_out, cg = w.shape[:2]
        c_in = cg * groups
        params = {"weight": w}
        if b is not None:
            params["bias"] = b
        pad_n = pads[:n] if sym else [0] * n
        if n == 2:
            cfg = f"nn.Conv2dConfig([{c_in}, {c_out}], {literal(kernel)})"
            if strides != [1, 1]:
                cfg += f".with_stride({literal(strides)})"
            if dil != [1, 1]:
                cfg += f".with_dilation({literal(dil)})"
            if any(pad_n):
                cfg += f".with_padding(nn.PaddingConfig2d.Explicit({pad_n[0]}, {pad_n[1]}))"
            ann = "nn.Conv2d"
        else:
            cfg = f"nn.Conv1dConfig({c_in}, {c_out}, {kernel[0]})"
            if strides != [1]:
                cfg += f".with_stride({strides[0]})"
            if dil != [1]:
                cfg += f".with_dilation({dil[0]})"
            if any(pad_n):
                cfg += f".with_padding(nn.PaddingConfig1d.Explicit({pad_n[0]}))"
            ann = "nn.Conv1d"
        _bind_conv_layer(low, node, "conv", ann, cfg, groups, b is not None, params, x)
        return
    fn = "conv2d" if n == 2 else "conv1d"
    bias = low.var(bname) if bname else "None"
    pad_n = pads[:n] if sym else [0] * n
    opts = f"ConvOptions({literal(strides)}, {literal(pad_n)}, {literal(dil)}, {groups})"
    low.bind(node, f"F.{fn}({x}, {low.var(wname)}, {bias}, {opts})", "conv")


def _bind_conv_layer(low: Lowering, node: Any, kind: str, ann: str, cfg: str, groups: int, has_bias: bool,
                     params: dict, x: str, suffix: str = "") -> None:
    """Finish a conv layer's config (groups, bias), declare the layer and bind its call."""
    if groups != 1:
        cfg += f".with_groups({groups})"
    if not has_bias:
        cfg += ".with_bias(False)"
    name = low.layer(kind, ann, f"{cfg}.init(device, backend=B)", params)
    low.bind(node, f"self.{name}({x}){suffix}", f"{name}_out")


@op("ConvTranspose", check=_check_conv)
def _conv_transpose(low: Lowering, node: Any, a: dict) -> None:
    wname, bname = node.input[1], inp(node, 2)
    kernel = _kernel(low.graph, node, a)
    n = len(kernel)
    strides = [int(v) for v in a.get("strides", [1] * n)]
    dil = [int(v) for v in a.get("dilations", [1] * n)]
    groups = int(a.get("group", 1))
    out_pad = [int(v) for v in a.get("output_padding", [0] * n)]
    mode = _auto_pad(a)
    if "output_shape" in a or mode in ("SAME_UPPER", "SAME_LOWER"):
        dims = _spatial_dims(low.graph, node.input[0])
        target = list(a["output_shape"])[-n:] if "output_shape" in a else [d * s for d, s in zip(dims, strides)]
        begins, ends = [], []
        for size, k, s, d, op_, t in zip(dims, kernel, strides, dil, list(out_pad), target):
            total = s * (size - 1) + op_ + (k - 1) * d + 1 - t
            if total < 0:  # a larger output than the kernel covers: extra output padding
                out_pad[len(begins)] += -total
                total = 0
            small, big = total // 2, total - total // 2
            lower = mode != "SAME_UPPER"  # the spec gives the larger half to the begin unless SAME_UPPER
            begins.append(big if lower else small)
            ends.append(small if lower else big)
        pads = begins + ends
    else:
        pads = [int(p) for p in a.get("pads", [0] * (2 * n))]
    sym = pads[:n] == pads[n:]
    pad_n = pads[:n] if sym else [0] * n
    x = low.var(node.input[0])
    w, b = low.const(wname), low.const(bname)
    crop = ""
    if not sym:
        # full output, then drop ONNX's (asymmetric) pads
        crop = ".slice([slice(None), slice(None), " + ", ".join(
            f"slice({pb}, {'-' + str(pe) if pe else 'None'})" for pb, pe in zip(pads[:n], pads[n:])) + "])"
    if w is not None and (not bname or b is not None):
        c_in, og = w.shape[:2]
        c_out = og * groups
        params = {"weight": w}
        if b is not None:
            params["bias"] = b
        if n == 2:
            cfg = f"nn.ConvTranspose2dConfig([{c_in}, {c_out}], {literal(kernel)})"
            opt = {"stride": strides, "dilation": dil, "padding": pad_n, "padding_out": out_pad}
            defaults = {"stride": [1, 1], "dilation": [1, 1], "padding": [0, 0], "padding_out": [0, 0]}
            ann = "nn.ConvTranspose2d"
        else:
            cfg = f"nn.ConvTranspose1dConfig([{c_in}, {c_out}], {kernel[0]})"
            opt = {"stride": strides[0], "dilation": dil[0], "padding": pad_n[0], "padding_out": out_pad[0]}
            defaults = {"stride": 1, "dilation": 1, "padding": 0, "padding_out": 0}
            ann = "nn.ConvTranspose1d"
        for key, val in opt.items():
            if val != defaults[key]:
                cfg += f".with_{key}({literal(val)})"
        _bind_conv_layer(low, node, "conv_transpose", ann, cfg, groups, b is not None, params, x, crop)
        return
    fn = "conv_transpose2d" if n == 2 else "conv_transpose1d"
    bias = low.var(bname) if bname else "None"
    opts = f"ConvTransposeOptions({literal(strides)}, {literal(pad_n)}, {literal(out_pad)}, {literal(dil)}, {groups})"
    low.bind(node, f"F.{fn}({x}, {low.var(wname)}, {bias}, {opts}){crop}", "conv_transpose")


# -- pooling ------------------------------------------------------------------------
def _check_pool(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = _auto_pad_problems(node, a)
    if node.op_type == "MaxPool" and len(node.output) > 1 and node.output[1] and len(a.get("kernel_shape", [])) != 2:
        problems.append("MaxPool's Indices output for a pool that is not 2-D")
    if _auto_pad(a) in ("SAME_UPPER", "SAME_LOWER") and _spatial_dims(graph, node.input[0]) is None:
        problems.append(f"{node.op_type} auto_pad={_auto_pad(a)} without static spatial input dims")
    return problems


@op("MaxPool", "AveragePool", check=_check_pool)
def _pool(low: Lowering, node: Any, a: dict) -> None:
    kernel = list(a["kernel_shape"])
    n = len(kernel)
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    ceil = bool(a.get("ceil_mode", 0))
    pads = _pads(low, node, a, kernel, strides, dil)
    x = low.var(node.input[0])
    is_int = low.value(node.input[0]).kind == "Int"
    if is_int:
        x = f"{x}.float()"
    back = ".int()" if is_int else ""
    one = (lambda v: literal(v[0])) if n == 1 else literal
    # burnbook's own pools take symmetric pads of at most half the kernel
    native = n in (1, 2) and pads[:n] == pads[n:] and all(p <= k // 2 for p, k in zip(pads, kernel))
    if node.op_type == "MaxPool":
        if len(node.output) > 1 and node.output[1]:
            order = int(a.get("storage_order", 0))
            low.bind_many(node, f"onnx_ops.max_pool_with_indices({x}, {literal(kernel)}, {literal(strides)}, "
                          f"{literal(pads)}, {literal(dil)}, {ceil}, {order})", 2, "max_pool")
        elif native:
            fn = "max_pool1d" if n == 1 else "max_pool2d"
            low.bind(node, f"F.{fn}({x}, {one(kernel)}, {one(strides)}, {one(pads[:n])}, {one(dil)}"
                     + (", ceil_mode=True)" if ceil else ")") + back, "max_pool")
        else:
            low.bind(node, f"onnx_ops.pool({x}, 'max', {literal(kernel)}, {literal(strides)}, {literal(pads)}, "
                     f"{literal(dil)}, {ceil}){back}", "max_pool")
        return
    include = bool(a.get("count_include_pad", 0))
    if native and not ceil and all(d == 1 for d in dil):
        fn = "avg_pool1d" if n == 1 else "avg_pool2d"
        expr = (f"F.{fn}({x}, {one(kernel)}, {one(strides)}, {one(pads[:n])}, "
                f"count_include_pad={include})")
    else:
        expr = (f"onnx_ops.pool({x}, 'avg', {literal(kernel)}, {literal(strides)}, {literal(pads)}, "
                f"{literal(dil)}, {ceil}, {include})")
    low.bind(node, expr + back, "avg_pool")


@op("GlobalAveragePool")
def _global_avg(low: Lowering, node: Any, a: dict) -> None:
    x, rank = low.var(node.input[0]), low.rank(node.input[0])
    if rank <= 3:
        expr = x + "".join(f".mean_dim({d})" for d in range(2, rank))
    else:   # the spatial dims as one reduction (see `reduce`)
        expr = f"onnx_ops.reduce({x}, 'mean', {list(range(2, rank))}, True, {rank})"
    low.bind(node, expr, "global_avg_pool")


def _check_global(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = rank_at_least(graph, node, 3)
    if node.op_type == "GlobalLpPool":
        problems += float_input(graph, node)
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
    problems = _auto_pad_problems(node, a) + float_input(graph, node)
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
