"""Element-wise operators beyond the first ones (`arithmetic`): unary math,
activations, comparisons, logic, bitwise, the variadic Max/Min/Sum/Mean,
Mod, Cast and CastLike, and Dropout: emitters of the operator table (`table`).

Operands of two-input operators follow NumPy's multidirectional
broadcasting: the lower-rank side gets leading size-1 dims
(`Lowering.aligned`) and the Tensor op broadcasts the rest. A constant
one-element operand becomes a number (`x.greater_elem(0.5)`), as a person
would write it. What the Tensor API spells in one call is emitted as that
call; the rest (rounding, inverse trigonometry, ELU and friends, bitwise
ops, Mod, casts to narrow types) goes through `runtime.elementwise` and
`runtime.cast`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..args import inp
from ..graph import Graph, elem_info
from ..lowering import Lowering, literal, quote
from ..table import Checker, Emitter
from ..table import op as _table_op


def op(*names: str, check: Checker | None = None, rank_of: int | None = None):
    """`table.op` for element-wise operators: the output's rank, when shape
    inference left it open (downstream of a run-time shape), is set to the
    inputs' broadcast rank (or that of input `rank_of`) before emitting."""
    def register(fn: Emitter) -> Emitter:
        def emit(low: Lowering, node: Any, a: dict) -> None:
            out = low.graph.values.get(node.output[0])
            if out is not None and out.rank is None:
                names = [node.input[rank_of]] if rank_of is not None else [n for n in node.input if n]
                out.rank = max(low.rank(n) for n in names)
            fn(low, node, a)

        _table_op(*names, check=check)(emit)
        return fn

    return register


def _scalar(low: Lowering, name: str, kind: str) -> str | None:
    """A constant one-element operand as a number literal of `kind`."""
    arr = low.const(name)
    if arr is None or arr.size != 1:
        return None
    v = arr.reshape(-1)[0]
    return literal(int(v)) if kind == "Int" else literal(np.float32(v))


def _number(value: float) -> str:
    """An attribute as an f32 literal (attributes are f32 in ONNX)."""
    return literal(np.float32(value))


def _operands(low: Lowering, node: Any) -> list[str]:
    """Every input with leading size-1 dims up to the output's rank."""
    rank = max(low.brank(n) for n in node.input)
    return [low.aligned(n, rank) for n in node.input]


# -- unary math -------------------------------------------------------------------------
_METHODS = {"Abs": "abs", "Neg": "neg", "Reciprocal": "recip", "Sign": "sign", "Sin": "sin", "Cos": "cos",
            "IsNaN": "is_nan", "Not": "bool_not"}
_HELPERS = {"Round": "round_even", "Floor": "floor", "Ceil": "ceil", "Tan": "tan", "Asin": "asin", "Acos": "acos",
            "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh"}


@op(*_METHODS)
def _method(low: Lowering, node: Any, a: dict) -> None:
    # Neg/Abs of a narrow signed int's MIN wrap back to MIN: ops.narrow_int_result
    low.bind(node, f"{low.var(node.input[0])}.{_METHODS[node.op_type]}()", node.op_type.lower())


@op(*_HELPERS)
def _helper(low: Lowering, node: Any, a: dict) -> None:
    low.bind(node, f"onnx_ops.{_HELPERS[node.op_type]}({low.var(node.input[0])})", node.op_type.lower())


# -- activations ---------------------------------------------------------------------------
@op("HardSigmoid", "HardSwish")
def _hard(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    if node.op_type == "HardSigmoid":
        alpha, beta = _number(a.get("alpha", 0.2)), _number(a.get("beta", 0.5))
        low.bind(node, f"activation.hard_sigmoid({x}, {alpha}, {beta})", "hard_sigmoid")
    else:  # x * max(0, min(1, x / 6 + 1 / 2)), MobileNetV3's activation
        low.bind(node, f"{x} * activation.hard_sigmoid({x}, {_number(1 / 6)}, 0.5)", "hard_swish")


@op("Softplus", "Mish")
def _activation(low: Lowering, node: Any, a: dict) -> None:
    fn = node.op_type.lower()
    low.bind(node, f"activation.{fn}({low.var(node.input[0])})", fn)


@op("Softsign")
def _softsign(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    low.bind(node, f"{x} / ({x}.abs() + 1.0)", "softsign")


@op("Swish")
def _swish(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    alpha = float(a.get("alpha", 1.0))
    expr = f"activation.silu({x})" if alpha == 1.0 else f"{x} * activation.sigmoid({x} * {_number(alpha)})"
    low.bind(node, expr, "swish")


@op("Elu", "Celu")
def _elu(low: Lowering, node: Any, a: dict) -> None:
    fn = node.op_type.lower()
    low.bind(node, f"onnx_ops.{fn}({low.var(node.input[0])}, {_number(a.get('alpha', 1.0))})", fn)


@op("Selu")
def _selu(low: Lowering, node: Any, a: dict) -> None:
    alpha = _number(a.get("alpha", 1.67326319217681884765625))
    gamma = _number(a.get("gamma", 1.05070102214813232421875))
    low.bind(node, f"onnx_ops.selu({low.var(node.input[0])}, {alpha}, {gamma})", "selu")


@op("ThresholdedRelu")
def _thresholded_relu(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    low.bind(node, f"{x}.mask_fill({x}.lower_equal_elem({_number(a.get('alpha', 1.0))}), 0.0)", "thresholded_relu")


@op("Shrink")
def _shrink(low: Lowering, node: Any, a: dict) -> None:
    lambd, bias = _number(a.get("lambd", 0.5)), _number(a.get("bias", 0.0))
    low.bind(node, f"onnx_ops.shrink({low.var(node.input[0])}, {lambd}, {bias})", "shrink")


@op("PRelu")
def _prelu(low: Lowering, node: Any, a: dict) -> None:
    x_name, slope_name = node.input[0], node.input[1]
    kind = low.value(x_name).kind
    x = low.var(x_name)
    zero = "0" if kind == "Int" else "0.0"
    # the slope broadcasts to x (one way): per channel it is [C, 1, 1] against [N, C, H, W]
    slope = _scalar(low, slope_name, kind) if low.rank(slope_name) <= low.rank(x_name) else None
    slope = slope if slope is not None else low.aligned(slope_name, low.brank(x_name))
    low.bind(node, f"{x}.mask_where({x}.lower_elem({zero}), {x} * {slope})", "prelu")


# -- comparisons and logic ----------------------------------------------------------------
_COMPARE = {"Greater": "greater", "GreaterOrEqual": "greater_equal", "Less": "lower", "LessOrEqual": "lower_equal"}
_MIRROR = {"greater": "lower", "greater_equal": "lower_equal", "lower": "greater", "lower_equal": "greater_equal"}


@op(*_COMPARE)
def _compare(low: Lowering, node: Any, a: dict) -> None:
    lhs, rhs = node.input[0], node.input[1]
    fn = _COMPARE[node.op_type]
    kind = low.value(lhs).kind
    right = _scalar(low, rhs, kind) if low.rank(rhs) <= low.rank(lhs) else None
    left = _scalar(low, lhs, kind) if right is None and low.rank(lhs) <= low.rank(rhs) else None
    if right is not None:
        expr = f"{low.var(lhs)}.{fn}_elem({right})"
    elif left is not None:  # `0.5 < x` is `x > 0.5`
        expr = f"{low.var(rhs)}.{_MIRROR[fn]}_elem({left})"
    else:
        x, y = _operands(low, node)
        expr = f"{x}.{fn}({y})"
    low.bind(node, expr, fn)


_LOGIC = {"And": "bool_and", "Or": "bool_or", "Xor": "not_equal"}


@op(*_LOGIC)
def _logic(low: Lowering, node: Any, a: dict) -> None:
    x, y = _operands(low, node)
    low.bind(node, f"{x}.{_LOGIC[node.op_type]}({y})", node.op_type.lower())


@op("IsInf")
def _is_inf(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    pos, neg = bool(a.get("detect_positive", 1)), bool(a.get("detect_negative", 1))
    if pos and neg:
        expr = f'{x}.abs().equal_elem(float("inf"))'
    elif pos or neg:
        expr = f'{x}.equal_elem({"" if pos else "-"}float("inf"))'
    else:
        expr = f"onnx_ops.is_inf({x}, False, False)"
    low.bind(node, expr, "is_inf")


# -- bitwise --------------------------------------------------------------------------------------
_BITWISE = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
            "BitwiseNot": "bitwise_not"}
_DIRECTIONS = {"LEFT": "bitwise_left_shift", "RIGHT": "bitwise_right_shift"}


def _direction(a: dict) -> str:
    d = a.get("direction", b"")
    return d.decode(errors="replace") if isinstance(d, bytes) else str(d)


def _check_bitwise(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = []
    v = graph.values.get(node.input[0]) if node.input else None
    if v is not None and v.kind not in (None, "Int"):
        problems.append(f"{node.op_type} of {v.kind} values (ONNX defines it on integers)")
    if node.op_type == "BitShift" and _direction(a) not in _DIRECTIONS:
        problems.append(f"BitShift direction={_direction(a)!r} (ONNX defines LEFT, RIGHT)")
    return problems


@op(*_BITWISE, "BitShift", check=_check_bitwise)
def _bitwise(low: Lowering, node: Any, a: dict) -> None:
    fn = _DIRECTIONS[_direction(a)] if node.op_type == "BitShift" else _BITWISE[node.op_type]
    # the ONNX element type decides how NOT and << wrap (uint8: ~0 is 255)
    dtype = quote(low.value(node.input[0]).dtype)
    low.bind(node, f"onnx_ops.{fn}({', '.join(_operands(low, node))}, {dtype})", fn)


# -- variadic -----------------------------------------------------------------------------------
@op("Sum", "Mean", "Max", "Min")
def _variadic(low: Lowering, node: Any, a: dict) -> None:
    parts = _operands(low, node)
    if len(parts) == 1:
        low.alias(node, low.var(node.input[0]))
        return
    if node.op_type in ("Max", "Min"):
        clamp = "clamp_min" if node.op_type == "Max" else "clamp_max"
        scalar = _clamp_scalar(low, node)
        if scalar is not None:  # max(x, c) is x.clamp_min(c)
            low.bind(node, f"{low.var(scalar[0])}.{clamp}({scalar[1]})", node.op_type.lower())
            return
        fn = "maximum" if node.op_type == "Max" else "minimum"
        expr = f"onnx_ops.{fn}({', '.join(parts)})"
    else:
        expr = " + ".join(parts)
        if node.op_type == "Mean":
            expr = f"({expr}) / {literal(float(len(parts)))}"
    low.bind(node, expr, node.op_type.lower())


def _clamp_scalar(low: Lowering, node: Any) -> tuple[str, str] | None:
    """(tensor input, number) when Max/Min has two inputs, one a constant
    one-element value whose rank does not widen the other's."""
    if len(node.input) != 2:
        return None
    first, second = node.input[0], node.input[1]
    for x, c in ((first, second), (second, first)):
        kind = low.value(x).kind
        number = _scalar(low, c, kind) if low.rank(c) <= low.rank(x) and low.const(x) is None else None
        if number is not None and "nan" not in number:
            return x, number
    return None


# -- Mod ----------------------------------------------------------------------------------------
def _check_mod(graph: Graph, node: Any, a: dict) -> list[str]:
    fmod = a.get("fmod", 0)
    return [] if fmod in (0, 1) else [f"Mod fmod={fmod} (ONNX defines 0 and 1)"]


@op("Mod", check=_check_mod)
def _mod(low: Lowering, node: Any, a: dict) -> None:
    lhs, rhs = node.input[0], node.input[1]
    kind = low.value(lhs).kind
    fmod = bool(a.get("fmod", 0))
    flag = ", fmod=True" if fmod else ""
    c = _scalar(low, rhs, kind) if low.rank(rhs) <= low.rank(lhs) else None
    if kind == "Int" and not fmod:  # Python's %, the Tensor API's `remainder`
        if c is not None and c != "0":
            low.bind(node, f"{low.var(lhs)}.remainder_scalar({c})", "mod")
            return
        if low.shape(lhs) is not None and low.shape(lhs) == low.shape(rhs):
            low.bind(node, f"{low.var(lhs)}.remainder({low.var(rhs)})", "mod")
            return
    if c is not None and c != "0":
        low.bind(node, f"onnx_ops.mod({low.var(lhs)}, {c}{flag})", "mod")
        return
    x, y = _operands(low, node)
    low.bind(node, f"onnx_ops.mod({x}, {y}{flag})", "mod")


# -- Cast and CastLike -----------------------------------------------------------------------
_CAST_KIND = {"Float": "float", "Int": "int", "Bool": "bool"}


_ROUND_MODES = ("up", "down", "nearest")


def _check_cast(graph: Graph, node: Any, a: dict) -> list[str]:
    info = elem_info(a.get("to", 1))
    problems = [] if info else [f"Cast to element type {a.get('to')}"]
    mode = a.get("round_mode", b"up")
    mode = mode.decode(errors="replace") if isinstance(mode, bytes) else mode
    if mode not in _ROUND_MODES:
        problems.append(f"Cast round_mode={mode!r} (ONNX defines {', '.join(_ROUND_MODES)})")
    return problems


@_table_op("Cast", check=_check_cast)
def _cast(low: Lowering, node: Any, a: dict) -> None:
    src = low.value(node.input[0])
    out = low.graph.values.get(node.output[0])
    if out is not None and out.rank is None:  # shape inference stopped at a run-time shape: a cast keeps the rank
        out.rank = src.rank
    kind, dtype = elem_info(a["to"])
    if node.input[0] in low.host and kind == "Int" and src.kind == "Int":  # shape values fit every int type
        low.host_alias(node, node.input[0])
        return
    x = low.var(node.input[0])
    expr = x if src.kind == kind else f"{x}.{_CAST_KIND[kind]}()"
    saturate = bool(a.get("saturate", 1))
    if kind == "Float" and dtype not in ("float32", "float64"):
        sat = "" if saturate else ", saturate=False"
        mode = a.get("round_mode", b"up")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if dtype == "float8_e8m0fnu":
            sat += f", round_mode={quote(mode)}"
        expr = f"onnx_ops.round_float({expr}, {quote(dtype)}{sat})"
    elif kind == "Int" and dtype != "int64" and (src.kind != "Int" or src.dtype != dtype):
        expr = f"onnx_ops.wrap_int({expr}, {quote(dtype)})"
    if expr == x:
        low.alias(node, x)
    else:
        low.bind(node, expr, "cast")


_ELEM_CODES = {info[1]: code for code in range(64) if (info := elem_info(code)) is not None}


def _target_code(graph: Graph, node: Any) -> int | None:
    v = graph.values.get(node.input[1]) if len(node.input) > 1 else None
    return None if v is None or v.kind is None else _ELEM_CODES.get(v.dtype)


def _check_cast_like(graph: Graph, node: Any, a: dict) -> list[str]:
    code = _target_code(graph, node)
    if code is None:
        target = node.input[1] if len(node.input) > 1 else ""
        v = graph.values.get(target)
        return [f"CastLike to the type of {target!r}, {_type_name(v)}, which burnbook tensors cannot hold"]
    return _check_cast(graph, node, dict(a, to=code))


def _type_name(v: Any) -> str:
    """An unsupported element type by its ONNX name (`string`)."""
    from onnx import TensorProto

    text = "an unknown type" if v is None or v.dtype is None else str(v.dtype)
    if text.startswith("element type "):
        try:
            return TensorProto.DataType.Name(int(text.split()[-1])).lower()
        except ValueError:
            pass
    return text


@op("CastLike", check=_check_cast_like, rank_of=0)
def _cast_like(low: Lowering, node: Any, a: dict) -> None:
    _cast(low, node, dict(a, to=_target_code(low.graph, node)))


# -- Dropout ----------------------------------------------------------------------------------
@_table_op("Dropout")
def _dropout(low: Lowering, node: Any, a: dict) -> None:
    ratio_name, train_name = inp(node, 1), inp(node, 2)
    ratio, train = low.const(ratio_name), low.const(train_name)
    x = low.var(node.input[0])
    wants_mask = len(node.output) > 1 and bool(node.output[1])
    if (ratio_name and ratio is None) or (train_name and train is None):
        r = low.var(ratio_name) if ratio_name else literal(float(a.get("ratio", 0.5)))
        t = low.var(train_name) if train_name else "False"
        low.bind_many(node, f"onnx_ops.dropout({x}, {r}, {t})", 2, "dropout")
        return
    prob = float(ratio.reshape(-1)[0]) if ratio is not None else float(a.get("ratio", 0.5))
    if prob == 0.0 or (train is not None and not bool(train.reshape(-1)[0])):
        low.alias(node, x)
    else:
        # As in Burn, a Dropout layer is active on an autodiff backend (training)
        # and the identity otherwise.
        name = low.layer("dropout", "nn.Dropout", f"nn.DropoutConfig({literal(prob)}).init()", {})
        low.bind(node, f"self.{name}({x})", f"{name}_out")
    if wants_mask:
        low.names[node.output[1]] = f"onnx_ops.dropout_mask({low.names[node.output[0]]})"
