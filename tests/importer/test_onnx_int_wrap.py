"""Integer results in the graph's narrow ONNX types: burnbook holds every ONNX
integer as i64, and the imported model must still give what onnxruntime
gives in int8/int16/int32/uint8/uint16/uint32 at the types' extremes (Add,
Sub, Mul, CumSum and Einsum wrap in two's complement; the int32 reductions
saturate; int32 Pow is exact in range and -2**31 past it), on every
backend. Only the operator/type pairs onnxruntime has kernels for are
compared with it."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook import Int, Tensor  # noqa: E402
from burnbook.importer.onnx import build_model, generate  # noqa: E402
from tests.backend.conftest import BACKENDS  # noqa: E402

NARROW = ["int8", "int16", "int32", "uint8", "uint16", "uint32"]


def _elem(dtype: str) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def _check(backend_name: str, model, **feeds: np.ndarray) -> None:
    """The imported model's outputs equal onnxruntime's, value for value."""
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    B = BACKENDS[backend_name]()
    args = [Tensor[B, max(a.ndim, 1), Int].from_data(a.astype(np.int64).reshape(a.shape or [1]))
            for a in feeds.values()]
    got = build_model(model, backend=B)(*args)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.to_numpy().reshape(w.shape), w.astype(np.int64))


def _extremes(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Operand pairs giving MAX + 1, MIN - 1, MAX * 2, MIN * MAX, MAX * MAX
    and in-range results, all representable in `dtype`."""
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max, info.min, info.max, 7, info.max // 3], dtype=dtype)
    b = np.array([1, 1, 2, info.max, info.max, 5, 2], dtype=dtype)
    return a, b


@pytest.mark.parametrize("backend_name", list(BACKENDS))
@pytest.mark.parametrize("dtype", NARROW)
def test_add_sub_mul_wrap_like_onnxruntime(backend_name, dtype):
    """int8: 127 + 1 is -128 and -128 - 1 is 127; uint8: 0 - 1 is 255;
    int32: (2**31 - 1) * 2 is -2; then a second op on the wrapped value."""
    a, b = _extremes(dtype)
    e = _elem(dtype)
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Sub", ["a", "b"], ["diff"]),
             helper.make_node("Mul", ["a", "b"], ["prod"]), helper.make_node("Sub", ["sum", "prod"], ["mixed"])]
    vi = [helper.make_tensor_value_info(n, e, [len(a)]) for n in ("a", "b", "sum", "diff", "prod", "mixed")]
    model = _model(nodes, vi[:2], vi[2:])
    info = np.iinfo(dtype)
    _check(backend_name, model, a=a, b=b)
    got = build_model(model, backend=BACKENDS["ndarray"]())(
        *[Tensor[BACKENDS["ndarray"](), 1, Int].from_data(v.astype(np.int64)) for v in (a, b)])
    assert got[0].to_numpy()[0] == info.min   # MAX + 1 wrapped
    assert got[1].to_numpy()[1] == info.max   # MIN - 1 wrapped


@pytest.mark.parametrize("backend_name", list(BACKENDS))
def test_int32_cumsum_wraps_and_reductions_saturate_like_onnxruntime(backend_name):
    """onnxruntime's int32 CumSum wraps, its ReduceSum/Prod/SumSquare/L1
    saturate; axes as constants (Tensor calls) and as a graph input
    (the run-time reduce helper), keepdims on and off. (Results past i64,
    such as (-2**31)**3: `test_int32_reductions_past_int64_saturate_like_onnxruntime`.)"""
    big, small = 2 ** 31 - 1, -2 ** 31
    x = np.array([[big, 1, big], [small, -1, 7], [3, 5, -7], [small, 1, 2]], dtype=np.int32)
    e = TensorProto.INT32
    inits = [numpy_helper.from_array(np.array([1], np.int64), "ax"),
             numpy_helper.from_array(np.array(1, np.int32), "ax0")]
    nodes = [helper.make_node("CumSum", ["x", "ax0"], ["cum"]),
             helper.make_node("CumSum", ["x", "ax0"], ["cum_rev"], reverse=1, exclusive=1),
             helper.make_node("ReduceSum", ["x", "ax"], ["sum"], keepdims=0),
             helper.make_node("ReduceSum", ["x", "axes"], ["sum_rt"], keepdims=1),
             helper.make_node("ReduceProd", ["x", "ax"], ["prod"], keepdims=0),
             helper.make_node("ReduceSumSquare", ["x", "ax"], ["sq"], keepdims=1),
             helper.make_node("ReduceL1", ["x", "ax"], ["l1"], keepdims=0)]
    outs = [helper.make_tensor_value_info(n, e, None) for n in ("cum", "cum_rev", "sum", "sum_rt", "prod", "sq", "l1")]
    model = _model(nodes, [helper.make_tensor_value_info("x", e, [4, 3]),
                           helper.make_tensor_value_info("axes", TensorProto.INT64, [1])], outs, inits)
    _check(backend_name, model, x=x, axes=np.array([1], np.int64))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceL1"])
def test_folded_int32_reductions_saturate_like_onnxruntime(op):
    """A reduction of constants is folded at import by onnx's reference
    evaluator, which wraps int32 where onnxruntime saturates (ReduceSum of
    [2**31 - 1, 1, 5] folded to -2**31 + 5): folding clamps as the model does."""
    x = np.array([[2 ** 31 - 1, 1, 5], [-2 ** 31, -1, 3], [4, -2, 6], [-2 ** 31, -2 ** 31, -2 ** 31]], np.int32)
    inits = [numpy_helper.from_array(x, "x"), numpy_helper.from_array(np.array([1], np.int64), "ax")]
    model = _model([helper.make_node(op, ["x", "ax"], ["y"], keepdims=0)], [],
                   [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits)
    forward = generate(model).source.split("def forward")[1]
    assert not any(call in forward for call in ("onnx_ops.", ".sum", ".prod", ".abs", ".powf")), forward  # folded
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {})[0]
    got = build_model(model, backend=BACKENDS["ndarray"]())()
    np.testing.assert_array_equal(got.to_numpy(), want.astype(np.int64))
    assert want.max() == 2 ** 31 - 1   # the first row saturated


@pytest.mark.parametrize("backend_name", list(BACKENDS))
@pytest.mark.parametrize("op", ["ReduceProd", "ReduceSumSquare"])
def test_int32_reductions_past_int64_saturate_like_onnxruntime(backend_name, op):
    """(-2**31)**3 wraps to 0 in i64 before any clamp could see it, and three
    squares of -2**31 pass 2**63: onnxruntime saturates both, and so must
    the imported model (the sign and size come from the same reduction in floats)."""
    x = np.array([[-2 ** 31] * 3, [2 ** 31 - 1] * 3, [-2 ** 31, 2 ** 31 - 1, 0], [3, -5, 7],
                  [-2 ** 31, -2 ** 31, 1]], np.int32)
    e = TensorProto.INT32
    inits = [numpy_helper.from_array(np.array([1], np.int64), "ax")]
    model = _model([helper.make_node(op, ["x", "ax"], ["y"], keepdims=0)],
                   [helper.make_tensor_value_info("x", e, [5, 3])], [helper.make_tensor_value_info("y", e, None)], inits)
    _check(backend_name, model, x=x)


def test_int32_einsum_wraps_like_onnxruntime():
    big = 2 ** 31 - 1
    a = np.array([[big, 1, big], [-big - 1, -1, 3]], np.int32)
    b = np.array([[1, 2], [1, 3], [1, -1]], np.int32)
    model = _model([helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")],
                   [helper.make_tensor_value_info("a", TensorProto.INT32, [2, 3]),
                    helper.make_tensor_value_info("b", TensorProto.INT32, [3, 2])],
                   [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 2])])
    _check("ndarray", model, a=a, b=b)


@pytest.mark.parametrize("backend_name", list(BACKENDS))
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32"])
@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 1, 2, 3), (4, 3, 5))])
def test_integer_matmul_is_exact_and_wraps_like_onnxruntime(backend_name, dtype, shapes):
    """MatMul of integers (onnxruntime has int32, int64, uint32 kernels) was
    refused only when the model ran: burnbook's matmul is a Float op. It is
    exact in i64, NumPy's rules for 1-D operands and batch broadcasting, and
    a 32-bit result wraps as onnxruntime's does."""
    sa, sb = shapes
    info = np.iinfo(dtype)
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    lo, hi = max(int(info.min), -2 ** 31), min(int(info.max), 2 ** 31 - 1)
    a = rng.integers(lo, hi, sa, dtype=np.int64).astype(dtype)
    b = rng.integers(lo, hi, sb, dtype=np.int64).astype(dtype)
    e = _elem(dtype)
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                   [helper.make_tensor_value_info("a", e, list(sa)), helper.make_tensor_value_info("b", e, list(sb))],
                   [helper.make_tensor_value_info("y", e, None)])
    _check(backend_name, model, a=a, b=b)
    if dtype != "int64":  # these operands leave the 32-bit range: the check above saw the wrap
        assert np.abs(np.matmul(a.astype(object), b.astype(object))).max() > 2 ** 32


@pytest.mark.parametrize("dtype", ["int32", "uint8"])
def test_add_then_reduce_sum_wraps_first_then_saturates(dtype):
    """The Add's wrapped values, not the exact i64 sums, feed the ReduceSum,
    as in onnxruntime (uint8 has no ReduceSum kernel there: NumPy's wrap of
    the exact sum is the reference for it)."""
    info = np.iinfo(dtype)
    a = np.array([[info.max, info.max, 1], [info.min, 3, 4]], dtype=dtype)
    b = np.array([[1, 1, 1], [0, 1, 1]], dtype=dtype)
    e = _elem(dtype)
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("ReduceSum", ["s", "ax"], ["y"], keepdims=0)]
    model = _model(nodes, [helper.make_tensor_value_info(n, e, [2, 3]) for n in ("a", "b")],
                   [helper.make_tensor_value_info("y", e, [2])],
                   [numpy_helper.from_array(np.array([1], np.int64), "ax")])
    if dtype == "int32":
        _check("ndarray", model, a=a, b=b)
    else:
        B = BACKENDS["ndarray"]()
        got = build_model(model, backend=B)(*[Tensor[B, 2, Int].from_data(v.astype(np.int64)) for v in (a, b)])
        np.testing.assert_array_equal(got.to_numpy(), (a + b).sum(1, dtype=dtype).astype(np.int64))


@pytest.mark.parametrize("backend_name", list(BACKENDS))
def test_int32_pow_is_exact_and_gives_onnxruntimes_overflow_value(backend_name):
    """Int Pow is computed in integers: 3**19 is 1162261467 (a float32 path
    gave 1162261504); past int32, and for 0**-1, onnxruntime gives
    -2**31; 2**-1 truncates to 0; (-2)**31 is int32's minimum itself."""
    a = np.array([3, -3, 2, -2, 46341, 3, 0, 1, -1, 2, 7, 0, 5], np.int32)
    b = np.array([19, 19, 31, 31, 2, 40, 0, -3, -3, -1, 0, -1, 3], np.int64)
    model = _model([helper.make_node("Pow", ["a", "b"], ["y"])],
                   [helper.make_tensor_value_info("a", TensorProto.INT32, [len(a)]),
                    helper.make_tensor_value_info("b", TensorProto.INT64, [len(b)])],
                   [helper.make_tensor_value_info("y", TensorProto.INT32, [len(a)])])
    _check(backend_name, model, a=a, b=b)


def test_int64_pow_is_exact_where_a_double_rounds():
    """3**39 needs 62 bits: exact here (onnxruntime's double gives
    4052555153018976256), checked against Python's ints; broadcast exponent."""
    a = np.array([[3, -3, 2, -1]], np.int64)
    b = np.array([[39], [2]], np.int64)
    model = _model([helper.make_node("Pow", ["a", "b"], ["y"])],
                   [helper.make_tensor_value_info("a", TensorProto.INT64, [1, 4]),
                    helper.make_tensor_value_info("b", TensorProto.INT64, [2, 1])],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 4])])
    B = BACKENDS["ndarray"]()
    got = build_model(model, backend=B)(*[Tensor[B, 2, Int].from_data(v) for v in (a, b)])
    want = [[int(x) ** int(e) for x in a[0]] for e in b[:, 0]]
    assert got.to_numpy().tolist() == want


def test_int32_shape_arithmetic_on_the_host_wraps():
    """Shape values of a run-time dim cast to int32 stay a Python list in the
    forward; an Add past int32's top wraps there too."""
    e = TensorProto.INT32
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Cast", ["shape"], ["shape32"], to=e),
             helper.make_node("Add", ["shape32", "top"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", e, ["n", 3])],
                   [helper.make_tensor_value_info("y", e, [2])],
                   [numpy_helper.from_array(np.array([2 ** 31 - 1, 5], np.int32), "top")])
    assert "onnx_ops.wrap_ints(" in generate(model).source
    _check("ndarray", model, x=np.zeros((2, 3), np.int32))


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_int64_and_float_graphs_get_no_wrapping_code(dtype):
    e = _elem(dtype)
    nodes = [helper.make_node(op, ["a", "b"], [op.lower()]) for op in ("Add", "Sub", "Mul")]
    nodes.append(helper.make_node("ReduceSum", ["add"], ["y"], keepdims=0))
    model = _model(nodes, [helper.make_tensor_value_info(n, e, [3]) for n in ("a", "b")],
                   [helper.make_tensor_value_info(n, e, None) for n in ("sub", "mul", "y")])
    source = generate(model).source
    assert "remainder_scalar" not in source and "clamp" not in source
