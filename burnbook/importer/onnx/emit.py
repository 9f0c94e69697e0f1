"""Emitting one node: its table emitter, then, for the operators that can
leave a narrow integer type's range, the line that brings the result back
into it as onnxruntime does (`narrow_int_result`).

Int tensors hold every ONNX integer type as i64; the wrapping and
saturating rules below are onnxruntime's. `passes.fold` folds constants by
the same rules.
"""

from __future__ import annotations

from typing import Any

from .args import axes_of, axes_source
from .graph import attrs
from .lowering import Lowering, quote
from .table import TABLE


# -- Reduce* through the runtime's reduce_ext (the index family's reductions) --------------
REDUCE_EXT = {
    "ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2",
    "ReduceLogSum": "log_sum", "ReduceLogSumExp": "log_sum_exp", "ReduceSumSquare": "sum_square",
}
"""ONNX reduction -> the `reduce_ext` op name."""


def reduce_ext_call(low: Lowering, node: Any, x: str) -> str:
    """The `onnx_ops.reduce_ext` call computing the Reduce* `node` of the
    source expression `x` (its first input, or a cast of it)."""
    a = attrs(node)
    noop = ", noop_with_empty_axes=True" if a.get("noop_with_empty_axes", 0) else ""
    axes = axes_source(axes_of(low, node, a))
    return (f"onnx_ops.reduce_ext({x}, {quote(REDUCE_EXT[node.op_type])}, {axes}, {bool(a.get('keepdims', 1))}, "
            f"{low.rank(node.input[0])}{noop})")


# -- narrow integer types ---------------------------------------------------------------
# Int tensors hold every ONNX integer type as i64, so these operators can leave
# a narrower output type's range; onnxruntime's kernels then wrap in two's
# complement (int8 127 + 1 is -128, uint8 0 - 1 is 255, int32 CumSum and Einsum
# too, and MatMul; Neg and Abs of int8 -128 are -128, as in NumPy and PyTorch) ...
_WRAPPING = frozenset({"Add", "Sub", "Mul", "Sum", "CumSum", "Einsum", "MatMul", "Neg", "Abs"})
# ... but its int32 reductions compute exactly and saturate at the bounds
# (ReduceSum of [2**31 - 1, 1] is 2**31 - 1).
SATURATING = frozenset({"ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceL1"})
# Of those, these can pass i64's range before the clamp ((-2**31)**3 wraps to
# 0): the same reduction in floats decides which results saturate.
PAST_I64 = frozenset({"ReduceProd", "ReduceSumSquare"})
_NARROW_INTS = {"int8": (-2 ** 7, 8), "int16": (-2 ** 15, 16), "int32": (-2 ** 31, 32),
                "uint8": (0, 8), "uint16": (0, 16), "uint32": (0, 32)}


def narrow_int_result(low: Lowering, node: Any) -> None:
    """After `node`'s emitter: when its output's ONNX type is an integer type
    narrower than 64 bits and the operator can leave that range, bring the
    i64 result back into it as onnxruntime does. Float and int64 outputs get
    no extra line."""
    wraps = node.op_type in _WRAPPING
    if not (wraps or node.op_type in SATURATING) or not node.output:
        return
    out = low.graph.values.get(node.output[0])
    lo_bits = _NARROW_INTS.get(out.dtype) if out is not None and out.kind == "Int" else None
    if lo_bits is None:
        return
    lo, bits = lo_bits
    if node.output[0] in low.host:  # shape arithmetic on the host: a fresh list, as aliases may share one
        values, like = low.host[node.output[0]]
        name = low.numbered(values.rstrip("0123456789") + "_wrapped")
        low.emit(f"{name} = onnx_ops.wrap_ints({values}, {lo}, {bits})")
        low.host[node.output[0]] = (name, like)
        return
    name = low.names.get(node.output[0])
    # an alias of an input (Sum of one value, a no-op reduction) is in range already
    if name is None or not name.isidentifier() or name in {low.names.get(i) for i in node.input}:
        return
    if node.op_type in PAST_I64:
        approx = reduce_ext_call(low, node, f"{low.var(node.input[0])}.float()")
        expr = f"onnx_ops.saturate_reduction({name}, {approx}, {lo}, {lo + 2 ** bits - 1})"
    elif not wraps:
        expr = f"{name}.clamp({lo}, {lo + 2 ** bits - 1})"
    elif lo == 0:
        expr = f"{name}.remainder_scalar({2 ** bits})"
    else:  # ((v - lo) mod 2**bits) + lo, with `remainder`'s non-negative result
        expr = f"({name} + {-lo}).remainder_scalar({2 ** bits}) - {-lo}"
    low.emit(f"{name} = {expr}")


def emit_node(low: Lowering, node: Any) -> None:
    """Run `node`'s emitter, then keep a narrow integer result in its type."""
    TABLE[node.op_type][0](low, node, attrs(node))
    narrow_int_result(low, node)
