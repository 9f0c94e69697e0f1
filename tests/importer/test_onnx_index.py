"""ONNX reductions, arg/top-k, cumulative sums and the gather/scatter family
(`ops/index`, `runtime/index`, `runtime/reductions`) where the onnx
package's node test cases do not reach: the opset-13 (axes attribute) and
opset-18 (axes input, constant or fed at run time) forms of every
reduction, repeated scatter targets, and the errors. Outputs are checked
against onnxruntime, gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from burnbook import Bool, Int, Tensor  # noqa: E402
from burnbook.autodiff import Autodiff  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model  # noqa: E402
from burnbook.autodiff.check import check_grad  # noqa: E402
from burnbook.importer.onnx import runtime as R  # noqa: E402

B = Autodiff[NdArray]

REDUCTIONS = ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
              "ReduceSumSquare", "ReduceMean", "ReduceSum"]
AXES_AS_INPUT_SINCE = {"ReduceSum": 13}  # the others moved axes to an input in opset 18


def _model(nodes, inputs, outputs, opset, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _tensor(v: np.ndarray):
    """A burnbook tensor of a feed (a scalar as `[1]`)."""
    v = v.reshape(v.shape or (1,))
    return (Tensor[NdArray, v.ndim, Int] if v.dtype.kind == "i" else Tensor[NdArray, v.ndim]).from_data(v)


def _compare(model, feeds, atol=1e-5):
    """The burnbook import on NdArray against onnxruntime, output by output."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    ours = build_model(model, backend=NdArray)(*[_tensor(v) for v in feeds.values()])
    ours = ours if isinstance(ours, tuple) else (ours,)
    for got, expected in zip(ours, want):
        got = got.to_numpy()
        assert got.reshape(expected.shape).shape == expected.shape and got.size == expected.size
        np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=1e-5, atol=atol)


def _reduce_model(op, opset, axes, keepdims, axes_mode, noop=0):
    """One reduction over a [2, 3, 4] input: axes as an attribute (before the
    opset that made them an input), a constant input, or a graph input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    attrs = {"keepdims": keepdims}
    if noop:
        attrs["noop_with_empty_axes"] = noop
    inputs, inits, names = [x], [], ["x"]
    if axes_mode == "attribute":
        if axes is not None:
            attrs["axes"] = axes
    elif axes is not None:
        names.append("axes")
        if axes_mode == "constant":
            inits.append(helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes))
        else:
            inputs.append(helper.make_tensor_value_info("axes", TensorProto.INT64, [len(axes)]))
    node = helper.make_node(op, names, ["y"], **attrs)
    return _model([node], inputs, [y], opset, inits)


def _reduce_input(op):
    x = np.random.default_rng(1).uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    return x if op in ("ReduceLogSum", "ReduceProd") else x - 1.0  # logs need positives


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_in_both_opset_forms_match_onnxruntime(op):
    since = AXES_AS_INPUT_SINCE.get(op, 18)
    x = _reduce_input(op)
    old = "attribute" if since == 18 else "constant"
    for opset, mode in ((13, old), (18, "constant"), (18, "graph input")):
        for axes, keepdims in (([0, -1], 1), ([1], 0), ([2, 0, 1], 0), (None, 0)):
            feeds = {"x": x}
            if mode == "graph input" and axes is not None:
                feeds["axes"] = np.asarray(axes, dtype=np.int64)
            _compare(_reduce_model(op, opset, axes, keepdims, mode), feeds)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceL2", "ReduceMean", "ReduceSum"])
def test_noop_with_empty_axes_returns_the_input(op):
    x = _reduce_input(op)
    _compare(_reduce_model(op, 18, None, 1, "constant", noop=1), {"x": x})
    # empty axes fed at run time: still the input, not a reduction over every dim
    _compare(_reduce_model(op, 18, [], 0, "graph input", noop=1), {"x": x, "axes": np.zeros(0, np.int64)})
    if op == "ReduceMax":  # booleans (any/all) too
        b = np.array([[True, False], [False, False]])
        for fn, want in (("max", b.any(1)), ("min", b.all(1))):
            flags = Tensor[NdArray, 2, Bool].from_data(b)
            np.testing.assert_array_equal(R.reduce_ext(flags, fn, [], True, 2, True).to_numpy(), b)
            np.testing.assert_array_equal(R.reduce_ext(flags, fn, [1], False, 2).to_numpy(), want)


def test_scatter_with_repeated_targets_combines_in_order():
    data = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    updates = np.array([[2.0, 3.0], [0.5, -1.0], [4.0, 5.0]], dtype=np.float32)
    for reduction in ("mul", "max", "min"):
        # ScatterElements: each row writes both its updates to one column
        idx = helper.make_tensor("idx", TensorProto.INT64, [3, 2], [1, 1, -1, -1, 0, 0])
        node = helper.make_node("ScatterElements", ["x", "idx", "u"], ["y"], axis=1, reduction=reduction)
        model = _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
                                helper.make_tensor_value_info("u", TensorProto.FLOAT, [3, 2])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], 18, [idx])
        _compare(model, {"x": data, "u": updates})
        # ScatterND: rows 2, 0, 2 of the data, row 2 twice
        idx = helper.make_tensor("idx", TensorProto.INT64, [3, 1], [2, 0, -1])
        node = helper.make_node("ScatterND", ["x", "idx", "u"], ["y"], reduction=reduction)
        model = _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
                                helper.make_tensor_value_info("u", TensorProto.FLOAT, [3, 4])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], 18, [idx])
        _compare(model, {"x": data, "u": np.tile(updates[:, :1], (1, 4)) * np.arange(1, 5, dtype=np.float32)})


def test_constant_operands_become_fields_and_old_opsets_are_upgraded():
    """Indices, conditions, k, axes and depth stored in the file (record
    fields and literals rather than inputs), in an opset-11 model that the
    importer upgrades; TopK there still has k as an input, ArgMax keepdims."""
    i64 = TensorProto.INT64
    inits = [
        helper.make_tensor("gi", i64, [3, 2], [0, 3, 2, 2, 1, 0]),
        helper.make_tensor("cond", TensorProto.BOOL, [4], [True, False, True, True]),
        helper.make_tensor("k", i64, [1], [2]),
        helper.make_tensor("ax", i64, [], [1]),
        helper.make_tensor("depth", i64, [], [5]),
        helper.make_tensor("onoff", TensorProto.FLOAT, [2], [-1.0, 2.0]),
    ]
    nodes = [
        helper.make_node("GatherElements", ["x", "gi"], ["g"], axis=1),
        helper.make_node("ScatterElements", ["x", "gi", "g"], ["s"], axis=1),
        helper.make_node("Compress", ["s", "cond"], ["c"], axis=1),
        helper.make_node("TopK", ["c", "k"], ["tv", "ti"], axis=1, largest=0),
        helper.make_node("CumSum", ["tv", "ax"], ["cs"], reverse=1),
        helper.make_node("ArgMax", ["x"], ["am"], axis=1, keepdims=0),
        helper.make_node("OneHot", ["am", "depth", "onoff"], ["oh"], axis=0),
        helper.make_node("ReduceMax", ["oh"], ["rm"], axes=[0], keepdims=0),
    ]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in
            (("cs", TensorProto.FLOAT), ("ti", i64), ("oh", TensorProto.FLOAT), ("rm", TensorProto.FLOAT))]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])], outs, 11, inits)
    x = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    _compare(model, {"x": x})


def test_gradients_flow_through_the_helpers():
    """Values against NumPy, gradients against finite differences."""
    x = np.random.default_rng(2).uniform(0.5, 2.0, (3, 5))
    x[:, 1] *= -1  # distinct values, so top-k has no ties
    shifted = x - x.max()
    cases = [
        (lambda t: R.reduce_ext(t, "prod", [1], True, 2), x.prod(1, keepdims=True)),
        (lambda t: R.reduce_ext(t, "log_sum_exp", [0, 1], True, 2),
         np.log(np.exp(shifted).sum(keepdims=True)) + x.max()),
        (lambda t: R.cumsum(t, [1], False, True, 2), x[:, ::-1].cumsum(1)[:, ::-1]),
        (lambda t: R.topk(t, 2, 1, True, 2)[0], -np.sort(-x, 1)[:, :2]),
        (lambda t: R.scatter_elements(t, 1, Tensor[B, 2, Int].from_data(np.array([[4, 4], [0, 1], [2, 2]])),
                                      t.narrow(1, 0, 2), "max", 2),
         _scatter_max_reference(x)),
    ]
    for fn, want in cases:
        t = Tensor[B, 2].from_data(x.astype(np.float32))
        np.testing.assert_allclose(fn(t).to_numpy(), want, rtol=1e-5)
        check_grad(fn, t, eps=1e-3)


def _scatter_max_reference(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    for row, cols in enumerate([[4, 4], [0, 1], [2, 2]]):
        for j, col in enumerate(cols):
            out[row, col] = max(out[row, col], x[row, j])
    return out


def _refusal(node, inputs, output):
    model = _model([node], inputs, [output], 18)
    with pytest.raises(OnnxImportError) as err:
        build_model(model, backend=NdArray)
    return str(err.value)


def test_refusals_name_the_node_and_the_reason():
    f = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    i = helper.make_tensor_value_info("i", TensorProto.INT64, [3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])
    msg = _refusal(helper.make_node("ScatterElements", ["x", "i", "x"], ["y"], name="sc", reduction="mean"),
                   [f, i], y)
    assert "'sc'" in msg and "reduction='mean'" in msg
    msg = _refusal(helper.make_node("ArgMax", ["x"], ["y"], name="am", axis=2), [f], y)
    assert "'am'" in msg and "axis 2 is out of range for an input of rank 2" in msg
    b = helper.make_tensor_value_info("b", TensorProto.BOOL, [3, 4])
    msg = _refusal(helper.make_node("ReduceProd", ["b"], ["y"], name="rp"), [b], y)
    assert "'rp'" in msg and "bool" in msg
    s = helper.make_tensor_value_info("s", TensorProto.STRING, [3, 4])
    msg = _refusal(helper.make_node("TopK", ["s", "k"], ["y", "j"], name="tk"),
                   [s, helper.make_tensor_value_info("k", TensorProto.INT64, [1])], y)
    assert "'s'" in msg and "cannot hold" in msg
