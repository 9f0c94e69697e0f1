"""Arithmetic: Identity, the first activations (Relu, Sigmoid, Tanh, Exp,
Log, Sqrt, Erf, LeakyRelu, Gelu, Softmax, LogSoftmax), Add/Sub/Mul/Div,
Pow, Equal, Where, Clip, the matrix products MatMul and Gemm, and
ReduceMean/ReduceSum: emitters of the operator table (`table`).

Shape arithmetic on the host (`Lowering.bind_host`) stays a Python list
when every operand is one, so exporters' per-forward `Shape` plumbing
builds no tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..args import axes_of, axes_source, inp, literal_list, settle_reduced_rank
from ..graph import Graph
from ..lowering import Lowering, literal, quote
from ..table import op


# -- element-wise -----------------------------------------------------------------
@op("Identity")
def _identity(low: Lowering, node: Any, a: dict) -> None:
    low.alias(node, low.var(node.input[0]))


_UNARY = {
    "Relu": "activation.relu({x})", "Sigmoid": "activation.sigmoid({x})", "Tanh": "{x}.tanh()",
    "Exp": "{x}.exp()", "Log": "{x}.log()", "Sqrt": "{x}.sqrt()", "Erf": "{x}.erf()",
}


@op(*_UNARY)
def _unary(low: Lowering, node: Any, a: dict) -> None:
    out = low.graph.values.get(node.output[0])
    if out is not None and out.rank is None:  # shape inference stopped at a run-time shape: the rank is kept
        out.rank = low.rank(node.input[0])
    low.bind(node, _UNARY[node.op_type].format(x=low.var(node.input[0])), node.op_type.lower())


@op("LeakyRelu")
def _leaky_relu(low: Lowering, node: Any, a: dict) -> None:
    alpha = a.get("alpha", 0.01)
    low.bind(node, f"activation.leaky_relu({low.var(node.input[0])}, {literal(np.float32(alpha))})", "leaky_relu")


def _check_gelu(graph: Graph, node: Any, a: dict) -> list[str]:
    approx = a.get("approximate", b"none")
    approx = approx.decode(errors="replace") if isinstance(approx, bytes) else approx
    return [] if approx in ("none", "tanh") else [f"Gelu approximate={approx!r}"]


@op("Gelu", check=_check_gelu)
def _gelu(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    approx = a.get("approximate", b"none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    low.bind(node, f"activation.gelu({x}, approximate='tanh')" if approx == "tanh" else f"activation.gelu({x})",
             "gelu")


@op("Softmax", "LogSoftmax")
def _softmax(low: Lowering, node: Any, a: dict) -> None:
    fn = "softmax" if node.op_type == "Softmax" else "log_softmax"
    low.bind(node, f"activation.{fn}({low.var(node.input[0])}, {int(a.get('axis', -1))})", fn)


_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


def _scalar_of(low: Lowering, name: str) -> str | None:
    """A constant one-element Float operand as a Python number."""
    arr = low.const(name)
    if arr is None or arr.size != 1 or low.value(name).kind != "Float":
        return None
    return literal(np.float32(arr.reshape(-1)[0]))


def _host_len(low: Lowering, name: str, kind: str = "Int") -> int | None:
    """How many items a host-known value of `kind` (rank 0 or 1) holds, if known now."""
    known = low.host_ints(name) if kind == "Int" else low.host_list(name)
    if known is None or low.rank(name) > 1:
        return None
    if low.rank(name) == 0:
        return 1
    shape = low.shape(name)
    return shape[0] if shape else None


def _host_binary(low: Lowering, node: Any, sym: str) -> bool:
    """Add/Sub/Mul of shape arithmetic (ints kept on the host by `bind_host`
    or integer constants) as a Python list, so no tensor is built per call.
    Python ints are exact where int64 would wrap: shape values never get near."""
    lhs, rhs = node.input[0], node.input[1]
    if sym == "/" or low.value(node.output[0]).kind != "Int" or not (lhs in low.host or rhs in low.host):
        return False
    sizes = (_host_len(low, lhs), _host_len(low, rhs))
    if None in sizes or (sizes[0] != sizes[1] and 1 not in sizes):
        return False
    n = max(sizes)

    def item(name: str, size: int, i: int) -> str:
        if name in low.host:
            return f"{low.host[name][0]}[{i if size > 1 else 0}]"
        return str(int(low.const(name).reshape(-1)[i if size > 1 else 0]))

    parts = [f"{item(lhs, sizes[0], i)} {sym} {item(rhs, sizes[1], i)}" for i in range(n)]
    like = low.host[lhs if lhs in low.host else rhs][1]
    low.bind_host(node, "[" + ", ".join(parts) + "]", like, node.op_type.lower())
    return True


@op(*_BINARY)
def _binary(low: Lowering, node: Any, a: dict) -> None:
    lhs, rhs = node.input[0], node.input[1]
    sym = _BINARY[node.op_type]
    out = low.graph.values.get(node.output[0])
    if out is not None and out.rank is None:  # shape inference stopped at a run-time shape: broadcast ranks
        out.rank = max(low.rank(lhs), low.rank(rhs))
    if _host_binary(low, node, sym):
        return
    out_rank = max(low.brank(lhs), low.brank(rhs))
    out_kind = low.value(node.output[0]).kind
    float_out = out_kind == "Float"
    right = _scalar_of(low, rhs) if float_out and low.rank(rhs) <= low.rank(lhs) else None
    left = _scalar_of(low, lhs) if float_out and right is None and low.rank(lhs) <= low.rank(rhs) else None
    if right is not None:
        expr = f"{low.var(lhs)} {sym} {right}"
    elif left is not None:  # `2.0 - x`: Tensor takes numbers on either side
        expr = f"{left} {sym} {low.var(rhs)}"
    else:
        expr = f"{low.aligned(lhs, out_rank)} {sym} {low.aligned(rhs, out_rank)}"
    low.bind(node, expr, node.op_type.lower())


@op("Pow")
def _pow(low: Lowering, node: Any, a: dict) -> None:
    base, exp = node.input[0], node.input[1]
    out_rank = max(low.brank(base), low.brank(exp))
    kb, ke = low.value(base).kind, low.value(exp).kind
    scalar = _scalar_of(low, exp) if low.rank(exp) <= low.rank(base) else None
    b = low.aligned(base, out_rank)
    if kb == "Float" and scalar is not None:
        expr = f"{low.var(base)}.powf_scalar({scalar})"
    elif kb == ke == "Int":  # exact integers (a float loses int32 results past 2**24) in the output's range
        dtype = low.value(node.output[0]).dtype
        narrow = dtype in ("int8", "int16", "int32", "uint8", "uint16", "uint32")
        span = np.iinfo(dtype if narrow else np.int64)
        expr = f"onnx_ops.int_pow({b}, {low.aligned(exp, out_rank)}, {int(span.min)}, {int(span.max)})"
    else:
        e = low.aligned(exp, out_rank)
        b_f = b if kb == "Float" else f"{b}.float()"
        e_f = e if ke == "Float" else f"{e}.float()"
        expr = f"{b_f}.powf({e_f})" + ("" if kb == "Float" else ".int()")
    low.bind(node, expr, "pow")


def _host_select(low: Lowering, node: Any, fn: str, kinds: tuple) -> bool:
    """Equal or Where on shape values (rank 0 or 1, at least one kept on the
    host by `bind_host`, the others constants) as a Python list through
    `onnx_ops.<fn>`: an exporter's `expand(n, -1, -1)` compares its target
    with -1 and picks sizes, and no tensor need be built for that per call."""
    names = list(node.input[:len(kinds)])
    if not any(n in low.host for n in names) or low.rank(node.output[0]) > 1:
        return False
    lists, sizes = [], []
    for name, kind in zip(names, kinds):
        text, size = low.host_list(name), _host_len(low, name, kind)
        if text is None or size is None or low.value(name).kind != kind:
            return False
        lists.append(text)
        sizes.append(size)
    if len({s for s in sizes if s != 1}) > 1:
        return False
    like = low.host[next(n for n in names if n in low.host)][1]
    low.bind_host(node, f"onnx_ops.{fn}({', '.join(lists)})", like, node.op_type.lower())
    return True


@op("Equal")
def _equal(low: Lowering, node: Any, a: dict) -> None:
    lhs, rhs = node.input[0], node.input[1]
    if _host_select(low, node, "host_equal", ("Int", "Int")):
        return
    rank = max(low.brank(lhs), low.brank(rhs))
    shape = low.shape(node.output[0])
    left, right = low.aligned(lhs, rank), low.aligned(rhs, rank)
    if shape is not None and (low.shape(lhs) != shape or low.shape(rhs) != shape):
        target = literal(shape or [1])
        left = left if low.shape(lhs) == shape else f"{left}.expand({target})"
        right = right if low.shape(rhs) == shape else f"{right}.expand({target})"
    low.bind(node, f"{left}.equal({right})", "equal")


@op("Where")
def _where(low: Lowering, node: Any, a: dict) -> None:
    cond, x, y = node.input[:3]
    if _host_select(low, node, "host_where", ("Bool", "Int", "Int")):
        return
    rank = max(low.brank(cond), low.brank(x), low.brank(y))
    shape = low.shape(node.output[0])
    parts = []
    for name in (cond, x, y):
        e = low.aligned(name, rank)
        if shape is not None and low.shape(name) != shape:
            e = f"{e}.expand({literal(shape or [1])})"
        parts.append(e)
    low.bind(node, f"{parts[2]}.mask_where({parts[0]}, {parts[1]})", "where")


@op("Clip")
def _clip(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    lo_name, hi_name = inp(node, 1), inp(node, 2)
    kind = low.value(node.input[0]).kind
    lo, hi = low.const(lo_name), low.const(hi_name)
    expr = x
    if (lo is not None or not lo_name) and (hi is not None or not hi_name):
        cast = (lambda v: literal(int(v))) if kind == "Int" else (lambda v: literal(np.float32(v)))
        if lo is not None and hi is not None and lo.reshape(-1)[0] <= hi.reshape(-1)[0]:
            # one pass (ReLU6); min > max keeps the two steps, whose result is max as ONNX says
            expr += f".clamp({cast(lo.reshape(-1)[0])}, {cast(hi.reshape(-1)[0])})"
        else:
            if lo is not None:
                expr += f".clamp_min({cast(lo.reshape(-1)[0])})"
            if hi is not None:
                expr += f".clamp_max({cast(hi.reshape(-1)[0])})"
    else:
        lo_e = low.var(lo_name) if lo_name else "None"
        hi_e = low.var(hi_name) if hi_name else "None"
        expr = f"onnx_ops.clip({x}, {lo_e}, {hi_e})"
    low.bind(node, expr, "clip")


# -- matrix products --------------------------------------------------------------
@op("MatMul")
def _matmul(low: Lowering, node: Any, a: dict) -> None:
    lhs, rhs = node.input[0], node.input[1]
    ra, rb = low.rank(lhs), low.rank(rhs)
    w = low.const(rhs)
    if w is not None and rb == 2 and ra >= 1 and low.value(rhs).kind == "Float":
        d_in, d_out = w.shape
        params = {"weight": w}
        bias, out_node = ", bias=False", node
        # MatMul then Add of a constant vector is how exporters write a Linear
        # layer on inputs of rank > 2: fold the Add into the layer's bias.
        add = low.only_consumer(node.output[0])
        if add is not None and add.op_type == "Add" and ra >= 2:
            other = add.input[1] if add.input[0] == node.output[0] else add.input[0]
            b = low.const(other)
            if b is not None and b.ndim == 1 and b.shape[0] == d_out and low.value(other).kind == "Float":
                params["bias"], bias, out_node = b, "", add
                low.fused.add(id(add))
        name = low.layer("linear", "nn.Linear", f"nn.LinearConfig({d_in}, {d_out}{bias}).init(device, backend=B)",
                         params)
        x = low.var(lhs)
        expr = f"self.{name}({x})" if ra >= 2 else f"self.{name}({x}.unsqueeze()).squeeze(0)"
        low.bind(out_node, expr, f"{name}_out")
        return
    x, y = low.var(lhs), low.var(rhs)
    if "Int" in (low.value(lhs).kind, low.value(rhs).kind):
        # burnbook's matmul is a Float op: integers multiply exactly in i64
        # (MatMulInteger's helper, NumPy's rules for 1-D operands), and a
        # narrower type wraps as onnxruntime's kernels do (ops._WRAPPING).
        low.bind(node, f"onnx_ops.matmul_integer({x}, {y})", "matmul")
        return
    # NumPy's matmul rules: a 1-D lhs is a row [1, k], a 1-D rhs a column
    # [k, 1], both dropped again afterwards; batch dims broadcast.
    if ra == 1:
        x = f"{x}.unsqueeze()"
    if rb == 1:
        y = f"{y}.unsqueeze_dim(1)"
    r = max(max(ra, 2), max(rb, 2))
    x += ".unsqueeze()" * (r - max(ra, 2))
    y += ".unsqueeze()" * (r - max(rb, 2))
    expr = f"{x}.matmul({y})"
    if rb == 1:
        expr += f".squeeze({r - 1})"
    if ra == 1 and not (rb == 1 and r == 2):  # 1-D @ 1-D stays [1], burnbook's scalar
        expr += f".squeeze({r - 2})"
    low.bind(node, expr, "matmul")


@op("Gemm")
def _gemm(low: Lowering, node: Any, a: dict) -> None:
    A, Bn, C = node.input[0], node.input[1], inp(node, 2)
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    ta, tb = int(a.get("transA", 0)), int(a.get("transB", 0))
    w, c = low.const(Bn), low.const(C)
    x = low.var(A) + (".transpose()" if ta else "")
    d_out = None if w is None else (w.shape[0] if tb else w.shape[1])
    fits = not C or (c is not None and beta == 1.0 and c.ndim <= 1 and c.size in (1, d_out))
    if w is not None and alpha == 1.0 and fits:
        weight = w.T if tb else w
        d_in = weight.shape[0]
        params = {"weight": weight}
        bias = ""
        if c is not None:
            params["bias"] = np.broadcast_to(c.reshape(-1), (d_out,)).copy()
        else:
            bias = ", bias=False"
        name = low.layer("linear", "nn.Linear", f"nn.LinearConfig({d_in}, {d_out}{bias}).init(device, backend=B)",
                         params)
        low.bind(node, f"self.{name}({x})", f"{name}_out")
        return
    y = low.var(Bn) + (".transpose()" if tb else "")
    expr = f"{x}.matmul({y})"
    if alpha != 1.0:
        expr = f"{expr} * {literal(np.float32(alpha))}"
    if C:
        cexpr = low.aligned(C, 2)
        if beta != 1.0:
            cexpr = f"{cexpr} * {literal(np.float32(beta))}"
        expr = f"{expr} + {cexpr}"
    low.bind(node, expr, "gemm")



@op("ReduceMean", "ReduceSum")
def _reduce(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    fn = "mean" if node.op_type == "ReduceMean" else "sum"
    keep = bool(a.get("keepdims", 1))
    noop = bool(a.get("noop_with_empty_axes", 0))
    axes = axes_source(axes_of(low, node, a))
    rank = low.rank(x)
    settle_reduced_rank(low, node, keep)
    if axes == "None" or axes == "[]":
        if noop:
            low.alias(node, low.var(x))
            return
        axes = "None"
    const_axes = axes.startswith("[") and axes != "[]"
    if const_axes and (keep or rank > len(literal_list(axes))):
        # known axes: the Tensor API's own reductions, which keep the dim
        dims = sorted(v + rank if v < 0 else v for v in literal_list(axes))
        expr = low.var(x) + "".join(f".{fn}_dim({d})" for d in dims)
        if not keep:
            expr += "".join(f".squeeze({d})" for d in reversed(dims))
        low.bind(node, expr, f"reduce_{fn}")
        return
    noop_arg = ", noop_with_empty_axes=True" if noop else ""
    low.bind(node, f"onnx_ops.reduce({low.var(x)}, {quote(fn)}, {axes}, {keep}, {rank}{noop_arg})", f"reduce_{fn}")
