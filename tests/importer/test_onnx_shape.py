"""The shape-making ONNX operators (`ops/shape`) where the onnx node cases
do not reach: opset variants of Split, every Pad mode on a 4-D tensor
against onnxruntime, shapes that are only known at run time (which the
generated code must read then, not bake in), the statistics of the random
generators, and clean refusals."""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook import Float, Int, Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model, generate  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, opset=18, inits=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _f(array):
    array = np.asarray(array, dtype=np.float32)
    return Tensor[NdArray, array.ndim, Float].from_data(array)


def _i(array):
    array = np.asarray(array, dtype=np.int64)
    return Tensor[NdArray, array.ndim, Int].from_data(array)


def _ort(model, *feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: f for i, f in zip(sess.get_inputs(), feeds)})


# -- Split ----------------------------------------------------------------------------
def test_split_num_outputs_gives_a_smaller_last_part():
    """Opset 18's `num_outputs`: ceil(n / k) per part, the rest in the last."""
    x = np.arange(22, dtype=np.float32).reshape(2, 11)
    node = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)
    model = _model([node], [("x", F, [2, 11])], [(n, F, None) for n in "abc"])
    outs = build_model(model, backend=NdArray)(_f(x))
    assert [o.dims() for o in outs] == [[2, 4], [2, 4], [2, 3]]
    for got, want in zip(outs, _ort(model, x)):
        np.testing.assert_array_equal(got.to_numpy(), want)


def test_split_sizes_as_attribute_and_as_runtime_input():
    """The `split` attribute (opset 11) and a `split` input that is a graph
    value (read when the model runs) cut the same parts."""
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    old = _model([helper.make_node("Split", ["x"], ["a", "b"], axis=0, split=[2, 4])],
                 [("x", F, [6, 2])], [("a", F, None), ("b", F, None)], opset=11)
    a, b = build_model(old, backend=NdArray)(_f(x))
    np.testing.assert_array_equal(a.to_numpy(), x[:2])
    np.testing.assert_array_equal(b.to_numpy(), x[2:])
    new = _model([helper.make_node("Split", ["x", "s"], ["a", "b"], axis=0)],
                 [("x", F, [6, 2]), ("s", I64, [2])], [("a", F, None), ("b", F, None)], opset=13)
    model = build_model(new, backend=NdArray)
    for sizes in ([1, 5], [3, 3]):
        a, b = model(_f(x), _i(sizes))
        np.testing.assert_array_equal(b.to_numpy(), x[sizes[0]:])
    with pytest.raises(ValueError, match=r"sizes \[2, 2\] .* do not add up to dim 0's size 6"):
        model(_f(x), _i([2, 2]))


def test_parts_of_a_runtime_split_feed_later_nodes():
    """Shape inference knows nothing of Split's parts when the sizes are
    computed in the graph; they keep the input's rank (so a Mul after them
    translates), and Tile with run-time repeats keeps its input's."""
    nodes = [helper.make_node("Split", ["x", "s"], ["a", "b"], axis=-1), helper.make_node("Mul", ["a", "a"], ["y"]),
             helper.make_node("Tile", ["b", "r"], ["t"]), helper.make_node("Relu", ["t"], ["z"])]
    model = _model(nodes, [("x", F, [2, 6]), ("s", I64, [2]), ("r", I64, [2])], [("y", F, None), ("z", F, None)])
    m = build_model(model, backend=NdArray)
    x = np.arange(-6, 6, dtype=np.float32).reshape(2, 6)
    for sizes, reps in (([2, 4], [1, 2]), ([5, 1], [3, 1])):
        y, z = m(_f(x), _i(sizes), _i(reps))
        np.testing.assert_array_equal(y.to_numpy(), x[:, :sizes[0]] ** 2)
        np.testing.assert_array_equal(z.to_numpy(), np.maximum(np.tile(x[:, sizes[0]:], reps), 0))


# -- Pad ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes_on_4d_match_onnxruntime(mode):
    """Every mode on all four dims of `[N, C, H, W]`, pads given as a graph
    input (so read at run time), one of them negative (a crop)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    pads = np.array([1, 0, 2, 3, 0, 2, -1, 2], dtype=np.int64)
    inputs = ["x", "p"] + (["v"] if mode == "constant" else [])
    node = helper.make_node("Pad", inputs, ["y"], mode=mode)
    graph_in = [("x", F, [2, 3, 4, 5]), ("p", I64, [8])] + ([("v", F, [])] if mode == "constant" else [])
    model = _model([node], graph_in, [("y", F, None)], opset=19)
    feeds = [x, pads] + ([np.array(1.5, dtype=np.float32)] if mode == "constant" else [])
    want = _ort(model, *feeds)[0]
    got = build_model(model, backend=NdArray)(_f(x), _i(pads), *([_f([1.5])] if mode == "constant" else []))
    np.testing.assert_array_equal(got.to_numpy(), want)


def test_pad_attributes_of_opset_10():
    """Before opset 11 the pads and the fill value were attributes."""
    nodes = [helper.make_node("Pad", ["x"], ["y"], mode="edge", pads=[0, 1, 2, 0]),
             helper.make_node("Pad", ["x"], ["z"], pads=[1, 0, 0, 2], value=3.0)]
    model = _model(nodes, [("x", F, [2, 3])], [("y", F, None), ("z", F, None)], opset=10)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y, z = build_model(model, backend=NdArray)(_f(x))
    np.testing.assert_array_equal(y.to_numpy(), np.pad(x, [(0, 2), (1, 0)], mode="edge"))
    np.testing.assert_array_equal(z.to_numpy(), np.pad(x, [(1, 0), (0, 2)], constant_values=3.0))


def test_pad_gradients_match_torch():
    """Padding is built from slices and concatenation, so autodiff carries
    gradients through it: each input value collects the weights of every
    position it was copied to (reflect and circular padding in torch)."""
    torch = pytest.importorskip("torch")
    from burnbook.backend import Autodiff
    from burnbook.importer.onnx import runtime as onnx_ops

    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    pads = [0, 0, 2, 3, 0, 0, 1, 4]  # ONNX: begins of the 4 dims, then ends
    torch_pads = (3, 4, 2, 1)  # torch: (W begin, W end, H begin, H end)
    w = rng.standard_normal((1, 2, 7, 12)).astype(np.float32)
    for mode, torch_mode in (("reflect", "reflect"), ("wrap", "circular"), ("edge", "replicate")):
        t = Tensor[Autodiff[NdArray], 4].from_data(x).require_grad()
        grads = (onnx_ops.pad_nd(t, pads, mode) * Tensor[Autodiff[NdArray], 4].from_data(w)).sum().backward()
        tt = torch.tensor(x, requires_grad=True)
        (torch.nn.functional.pad(tt, torch_pads, mode=torch_mode) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(t.grad(grads).to_numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=mode)


def test_pad_axes_input_and_reflect_limit():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    pads = numpy_helper.from_array(np.array([2, 1], dtype=np.int64), "p")
    axes = numpy_helper.from_array(np.array([-1], dtype=np.int64), "ax")
    model = _model([helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], mode="reflect")],
                   [("x", F, [3, None])], [("y", F, None)], inits=[pads, axes])
    m = build_model(model, backend=NdArray)
    np.testing.assert_array_equal(m(_f(x)).to_numpy(), np.pad(x, [(0, 0), (2, 1)], mode="reflect"))
    with pytest.raises(ValueError, match="reflect pads 2, 1 must be smaller than dim 1's size 2"):
        m(_f(x[:, :2]))


# -- shapes known at run time ---------------------------------------------------------
def test_expand_with_a_runtime_shape():
    """A shape input that is a graph value is read when the model runs:
    one generated model expands to whatever shape it is given."""
    model = _model([helper.make_node("Expand", ["x", "s"], ["y"])],
                   [("x", F, [3, 1]), ("s", I64, [3])], [("y", F, None)])
    assert "onnx_ops.expand(" in generate(model).source
    m = build_model(model, backend=NdArray)
    x = np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
    for shape in ([2, 1, 4], [1, 3, 1], [5, 3, 2]):
        want = x * np.ones(shape, dtype=np.float32)
        np.testing.assert_array_equal(m(_f(x), _i(shape)).to_numpy(), want)


def test_zero_state_follows_the_batch_size():
    """An LSTM-style zero initial state: ConstantOfShape of [1, batch, 8]
    with the batch read from the input, as PyTorch exports it."""
    one = numpy_helper.from_array(np.array([1], dtype=np.int64), "one")
    hidden = numpy_helper.from_array(np.array([8], dtype=np.int64), "hidden")
    zero = numpy_helper.from_array(np.array(0, dtype=np.int64), "zero")
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "one_axis"], ["batch1"]),
        helper.make_node("Concat", ["one", "batch1", "hidden"], ["dims"], axis=0),
        helper.make_node("ConstantOfShape", ["dims"], ["h0"],
                         value=numpy_helper.from_array(np.array([0.25], dtype=np.float32))),
    ]
    axis0 = numpy_helper.from_array(np.array([0], dtype=np.int64), "one_axis")
    model = _model(nodes, [("x", F, ["batch", 5, 4])], [("h0", F, None)], inits=[one, hidden, zero, axis0])
    m = build_model(model, backend=NdArray)
    for batch in (2, 7):
        h0 = m(_f(np.zeros((batch, 5, 4)))).to_numpy()
        np.testing.assert_array_equal(h0, np.full((1, batch, 8), 0.25, dtype=np.float32))


def test_constant_shapes_fold_and_tile_reads_runtime_repeats():
    """A ConstantOfShape of a constant shape is stored as a constant (no
    code in forward); Tile with repeats from a graph input tiles as NumPy."""
    dims = numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "dims")
    cos = _model([helper.make_node("ConstantOfShape", ["dims"], ["c"],
                                   value=numpy_helper.from_array(np.array([7], dtype=np.int64))),
                  helper.make_node("Add", ["c", "x"], ["y"])],
                 [("x", I64, [2, 3])], [("y", I64, None)], inits=[dims])
    assert "constant_of_shape" not in generate(cos).source
    np.testing.assert_array_equal(build_model(cos, backend=NdArray)(_i(np.ones((2, 3)))).to_numpy(),
                                  np.full((2, 3), 8))
    tile = _model([helper.make_node("Tile", ["x", "r"], ["y"])], [("x", F, [2, 3]), ("r", I64, [2])],
                  [("y", F, None)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = build_model(tile, backend=NdArray)
    for reps in ([2, 1], [1, 3], [0, 2]):
        np.testing.assert_array_equal(m(_f(x), _i(reps)).to_numpy(), np.tile(x, reps))


def test_dynamic_dims_build_eye_size_and_big_constants_at_run_time():
    """EyeLike and Size of an input whose dims are symbolic, and a
    ConstantOfShape too big to store, are computed when the model runs."""
    # more elements than any import-time folding stores as a weight
    dims = numpy_helper.from_array(np.array([1025, 1024], dtype=np.int64), "dims")
    nodes = [helper.make_node("EyeLike", ["x"], ["eye"], k=1, dtype=TensorProto.INT64),
             helper.make_node("Size", ["x"], ["n"]),
             helper.make_node("ConstantOfShape", ["dims"], ["big"],
                              value=numpy_helper.from_array(np.array([1.5], dtype=np.float32)))]
    model = _model(nodes, [("x", F, ["r", "c"])], [("eye", I64, None), ("n", I64, None), ("big", F, None)],
                   inits=[dims])
    source = generate(model).source
    assert "onnx_ops.eye_like(" in source and "onnx_ops.size(" in source and "like=x" in source
    m = build_model(model, backend=NdArray)
    for shape in ((3, 5), (4, 2)):
        eye, n, big = m(_f(np.zeros(shape)))
        np.testing.assert_array_equal(eye.to_numpy(), np.eye(*shape, k=1, dtype=np.int64))
        assert n.to_numpy().tolist() == [shape[0] * shape[1]]
    assert big.dims() == [1025, 1024] and (big.to_numpy() == 1.5).all()


# -- generators -----------------------------------------------------------------------
N = 40_000  # draws: the sample mean's standard error is std / 200


def test_random_normal_and_uniform_statistics():
    nodes = [
        helper.make_node("RandomNormal", [], ["n"], shape=[200, 200], mean=2.0, scale=0.5, seed=3.0),
        helper.make_node("RandomUniformLike", ["x"], ["u"], low=-1.0, high=3.0),
    ]
    model = _model(nodes, [("x", F, [200, 200])], [("n", F, None), ("u", F, None)])
    m = build_model(model, backend=NdArray)
    NdArray.seed(11)
    n, u = (t.to_numpy() for t in m(_f(np.zeros((200, 200)))))
    assert n.shape == u.shape == (200, 200) and n.dtype == u.dtype == np.float32
    assert abs(n.mean() - 2.0) < 5 * 0.5 / 200 and abs(n.std() - 0.5) < 0.01
    assert u.min() >= -1.0 and u.max() < 3.0
    assert abs(u.mean() - 1.0) < 5 * (4 / 12 ** 0.5) / 200 and abs(u.std() - 4 / 12 ** 0.5) < 0.02
    NdArray.seed(11)  # burnbook's generator, not the ONNX seed attribute, makes draws repeat
    np.testing.assert_array_equal(m(_f(np.zeros((200, 200))))[0].to_numpy(), n)


def test_bernoulli_statistics_and_output_type():
    p = np.full((N,), 0.3, dtype=np.float32)
    p[:100] = 0.0
    p[100:200] = 1.0
    model = _model([helper.make_node("Bernoulli", ["p"], ["y"], dtype=TensorProto.INT64)],
                   [("p", F, [N])], [("y", I64, None)])
    y = build_model(model, backend=NdArray)(_f(p)).to_numpy()
    assert y.dtype == np.int64 and set(np.unique(y)) <= {0, 1}
    assert (y[:100] == 0).all() and (y[100:200] == 1).all()
    rest = y[200:]
    assert abs(rest.mean() - 0.3) < 5 * (0.21 / rest.size) ** 0.5


# -- refusals -------------------------------------------------------------------------
def test_refusals_name_the_node_and_the_reason():
    pad = _model([helper.make_node("Pad", ["x", "p"], ["y"], mode="mirror", name="pad_it")],
                 [("x", F, [2, 2]), ("p", I64, [4])], [("y", F, None)])
    with pytest.raises(OnnxImportError, match=r"node 'pad_it'.*: Pad mode 'mirror'"):
        generate(pad)
    rnd = _model([helper.make_node("RandomNormal", [], ["y"], shape=[2], dtype=TensorProto.INT32, name="r")],
                 [], [("y", TensorProto.INT32, None)])
    with pytest.raises(OnnxImportError) as err:
        generate(rnd)
    assert re.search(r"node 'r'.*: RandomNormal makes a tensor from nothing", str(err.value))
    assert "burnbook draws Float values" in str(err.value)
    d2s = _model([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="XYZ", name="d")],
                 [("x", F, [1, 4, 2, 2])], [("y", F, None)])
    with pytest.raises(OnnxImportError, match=r"node 'd'.*: DepthToSpace mode 'XYZ' \(DCR or CRD\)"):
        generate(d2s)
    tile = _model([helper.make_node("Tile", ["x", "r"], ["y"], name="t")], [("x", F, [2, 3])], [("y", F, None)],
                  inits=[numpy_helper.from_array(np.array([2], dtype=np.int64), "r")])
    with pytest.raises(OnnxImportError, match=r"node 't'.*Tile repeats \[2\] do not fit an input of rank 2"):
        generate(tile)
