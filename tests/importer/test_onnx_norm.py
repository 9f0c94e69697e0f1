"""ONNX import of the normalisation / resize / sampling family beyond the
onnx package's node cases: a PyTorch `F.interpolate` export checked against
onnxruntime (and its gradient against torch), GroupNormalization of both
opsets against torch, the Conv/ConvTranspose rules that need only the
spatial dims (dynamic batch) or a given kernel_shape (symbolic weight), and
the refusals."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook import Tensor  # noqa: E402
from burnbook.autodiff import Autodiff  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model, generate  # noqa: E402

RNG = np.random.default_rng(16)


def _model(nodes, inputs, outputs, opset=21, initializers=()):
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers)),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10  # what onnxruntime 1.23 reads
    return model


def _ort(model, feeds: dict) -> list:
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _run(model, *arrays):
    out = build_model(model, backend=NdArray)(*[Tensor[NdArray, a.ndim].from_data(a) for a in arrays])
    return out.to_numpy()


# -- Resize from PyTorch ------------------------------------------------------------------
class _Interpolations(torch.nn.Module):
    """Every common F.interpolate call: constant scales (bilinear, bicubic,
    align_corners) and a size, which the export computes from the input's
    shape at run time (the batch is dynamic)."""

    def forward(self, x):
        f = torch.nn.functional
        a = f.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        b = f.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        c = f.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)
        d = f.interpolate(x, scale_factor=2, mode="nearest")
        e = f.interpolate(x, size=(5, 9), mode="bilinear", align_corners=False)
        g = f.interpolate(x, size=(3, 4), mode="nearest")
        return a + b * 0.5 + c * 0.25 - d, e, g


@pytest.fixture(scope="module")
def interpolations():
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Interpolations(), (torch.zeros(2, 3, 4, 6),), buf, dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["sum", "sized", "nearest"],
                          dynamic_axes={"x": {0: "batch"}})
    return onnx.load_from_string(buf.getvalue())


def test_interpolate_export_matches_onnxruntime_and_torch(interpolations):
    x = RNG.standard_normal((3, 3, 4, 6)).astype(np.float32)  # a batch unlike the export's
    expected = _ort(interpolations, {"x": x})
    outs = build_model(interpolations, backend=NdArray)(Tensor[NdArray, 4].from_data(x))
    torch_outs = _Interpolations()(torch.from_numpy(x))
    for got, want, ref in zip(outs, expected, torch_outs):
        assert got.dims() == list(want.shape)
        np.testing.assert_allclose(got.to_numpy(), want, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(got.to_numpy(), ref.numpy(), atol=1e-5, rtol=1e-5)


def test_interpolate_gradient_matches_torch(interpolations):
    x = RNG.standard_normal((2, 3, 4, 6)).astype(np.float32)
    weights = [RNG.standard_normal(s).astype(np.float32) for s in ((2, 3, 8, 12), (2, 3, 5, 9), (2, 3, 3, 4))]
    tx = torch.from_numpy(x).requires_grad_()
    sum(((o * torch.from_numpy(w)).sum() for o, w in zip(_Interpolations()(tx), weights))).backward()
    B = Autodiff[NdArray]
    bx = Tensor[B, 4].from_data(x).require_grad()
    outs = build_model(interpolations, backend=B)(bx)
    loss = None
    for o, w in zip(outs, weights):
        term = (o * Tensor[B, 4].from_data(w)).sum()
        loss = term if loss is None else loss + term
    grads = loss.backward()
    np.testing.assert_allclose(bx.grad(grads).to_numpy(), tx.grad.numpy(), atol=1e-4, rtol=1e-4)


# -- GroupNormalization against torch -------------------------------------------------------
@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("constant", [True, False])
def test_group_normalization_matches_torch(opset, constant):
    groups, channels = 3, 6
    x = RNG.standard_normal((2, channels, 5, 4)).astype(np.float32) * 3 + 1
    # opset 18 scales each group, opset 21 each channel
    width = groups if opset == 18 else channels
    scale = RNG.standard_normal(width).astype(np.float32)
    bias = RNG.standard_normal(width).astype(np.float32)
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=groups, epsilon=1e-3)
    vi = helper.make_tensor_value_info
    inputs = [vi("x", TensorProto.FLOAT, list(x.shape))]
    inits = []
    if constant:
        inits = [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(bias, "bias")]
    else:
        inputs += [vi("scale", TensorProto.FLOAT, [width]), vi("bias", TensorProto.FLOAT, [width])]
    model = _model([node], inputs, [vi("y", TensorProto.FLOAT, list(x.shape))], opset, inits)
    source = generate(model).source
    assert ("nn.GroupNorm" in source) == constant
    per_channel = np.repeat(scale, channels // width), np.repeat(bias, channels // width)
    want = torch.nn.functional.group_norm(torch.from_numpy(x), groups, torch.from_numpy(per_channel[0]),
                                          torch.from_numpy(per_channel[1]), eps=1e-3).numpy()
    got = _run(model, x) if constant else _run(model, x, scale, bias)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)


def test_instance_normalization_matches_torch():
    x = RNG.standard_normal((2, 4, 7)).astype(np.float32)
    scale, bias = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    vi = helper.make_tensor_value_info
    model = _model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-4)],
                   [vi("x", TensorProto.FLOAT, [2, 4, 7])], [vi("y", TensorProto.FLOAT, [2, 4, 7])], 17,
                   [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")])
    want = torch.nn.functional.instance_norm(torch.from_numpy(x), weight=torch.from_numpy(scale),
                                             bias=torch.from_numpy(bias), eps=1e-4).numpy()
    np.testing.assert_allclose(_run(model, x), want, atol=1e-5, rtol=1e-5)


# -- GroupNormalization's stash_type (opset 21) against onnxruntime -------------------------------
def _stash_model(elem: int, stash: int | None, shape=(2, 4, 3, 5), groups: int = 2):
    attrs = {} if stash is None else {"stash_type": stash}
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=groups,
                            epsilon=1e-5, **attrs)
    vi = helper.make_tensor_value_info
    c = shape[1]
    return _model([node], [vi("x", elem, list(shape)), vi("s", elem, [c]), vi("b", elem, [c])],
                  [vi("y", elem, list(shape))], 21)


def _stash_backends():
    from tests.backend.conftest import BACKENDS

    return [pytest.param(name, id=name) for name in BACKENDS]


def _stash_run(backend_name: str, model, dtype, *arrays):
    from tests.backend.conftest import BACKENDS

    B = BACKENDS[backend_name]()
    tensors = [Tensor[B, a.ndim].from_data(a.astype(np.float32)).cast(dtype) for a in arrays]
    out = build_model(model, backend=B)(*tensors)
    assert out.dtype.np == dtype
    return out.to_numpy()


@pytest.mark.parametrize("backend_name", _stash_backends())
@pytest.mark.parametrize("stash", [None, 11])
def test_group_norm_stash_type_sets_the_precision_of_f64_statistics(backend_name, stash):
    """f64 input: stash_type 1 (the default, left out here) computes the
    statistics in f32, as onnxruntime does (off the f64 result by ~1e-7), and
    11 in f64 (agreeing to 1e-12); the normalised values go back to f64 for
    the scale and bias."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(21)
    # values exact in f32, so both sides read the same input
    x, s, b = (rng.standard_normal(n).astype(np.float32).astype(np.float64) for n in ((2, 4, 3, 5), 4, 4))
    model = _stash_model(TensorProto.DOUBLE, stash)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "s": s, "b": b})[0]
    exact = torch.nn.functional.group_norm(torch.from_numpy(x), 2, torch.from_numpy(s), torch.from_numpy(b),
                                           eps=1e-5).numpy()
    try:
        got = _stash_run(backend_name, model, np.float64, x, s, b)
    except RuntimeError as err:   # a Vulkan device without f64
        pytest.skip(str(err))
    if stash == 11:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got, exact, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
        assert 1e-9 < np.abs(got - exact).max() < 2e-6   # f32 statistics, not f64 ones
        assert 1e-9 < np.abs(want - exact).max()        # the oracle computes in f32 too


@pytest.mark.parametrize("backend_name", _stash_backends())
def test_group_norm_stash_type_of_f16_input_matches_onnxruntime(backend_name, stash=1):
    """f16 input with f32 statistics: f16 output, within an f16 rounding of
    onnxruntime (on such data f16 statistics would round alike: the f64 test
    above is the one that tells stash types apart)."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(10)
    x, s, b = (rng.standard_normal(n).astype(np.float16) for n in ((2, 4, 3, 5), 4, 4))
    x = (x * 2 + 3).astype(np.float16)   # an offset mean: f16 statistics differ from f32 ones
    model = _stash_model(TensorProto.FLOAT16, stash)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "s": s, "b": b})[0]
    got = _stash_run(backend_name, model, np.float16, x, s, b)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_group_norm_stash_type_chooses_the_layer_or_the_runtime():
    """The nn.GroupNorm layer (x's own type) serves f32 input with f32
    statistics; every other stash goes through onnx_ops.group_norm with it."""
    def source(elem, stash):
        model = _stash_model(elem, stash)
        inits = [numpy_helper.from_array(np.ones(4, helper.tensor_dtype_to_np_dtype(elem)), n) for n in "sb"]
        model.graph.initializer.extend(inits)
        del model.graph.input[1:]
        return generate(model).source

    assert "nn.GroupNorm" in source(TensorProto.FLOAT, None) and "stash" not in source(TensorProto.FLOAT, 1)
    assert "stash='float32'" in source(TensorProto.FLOAT16, 1)
    assert "stash='float16'" in source(TensorProto.FLOAT, 10)
    assert "stash='float64'" in source(TensorProto.DOUBLE, 11)


@pytest.mark.parametrize("stash, name", [(16, "bfloat16"), (7, "int64"), (99, "no float type")])
def test_group_norm_stash_type_burnbook_cannot_hold_is_refused(stash, name, tmp_path):
    path = tmp_path / "gn.onnx"
    onnx.save(_stash_model(TensorProto.FLOAT, stash), str(path))
    with pytest.raises(OnnxImportError, match=rf"(?s)gn\.onnx.*node 'gn'.*stash_type={stash} \({name}\)") as err:
        build_model(str(path), backend=NdArray)
    assert "float32 (1), float16 (10) or float64 (11)" in str(err.value)


# -- Conv / ConvTranspose with a dynamic batch or a symbolic weight ------------------------------
def _dynamic(name: str, dims: list) -> object:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def test_same_padding_and_output_shape_with_a_dynamic_batch_match_onnxruntime():
    w = RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)
    wt = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 1]),
        helper.make_node("ConvTranspose", ["c", "wt"], ["t"], output_shape=[8, 9], strides=[2, 2]),
        helper.make_node("ConvTranspose", ["c", "wt"], ["u"], auto_pad="SAME_LOWER", strides=[2, 2]),
        helper.make_node("ConvTranspose", ["c", "wt"], ["v"], auto_pad="SAME_UPPER", strides=[2, 2]),
    ]
    model = _model(nodes, [_dynamic("x", ["N", 2, 7, 5])],
                   [_dynamic("t", ["N", 3, 8, 9]), _dynamic("u", ["N", 3, 8, 10]), _dynamic("v", ["N", 3, 8, 10])], 17,
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(wt, "wt")])
    x = RNG.standard_normal((3, 2, 7, 5)).astype(np.float32)
    expected = _ort(model, {"x": x})
    outs = build_model(model, backend=NdArray)(Tensor[NdArray, 4].from_data(x))
    assert len(outs) == len(expected) == 3
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got.to_numpy(), want, atol=1e-5, rtol=1e-5)


def test_conv_transpose_of_a_symbolic_weight_uses_kernel_shape():
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[3, 2], strides=[2, 1],
                            output_shape=[9, 5])
    model = _model([node], [_dynamic("x", ["N", 2, 4, 4]), _dynamic("w", [2, 3, "kh", "kw"])],
                   [_dynamic("y", None)], 17)
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = RNG.standard_normal((2, 3, 3, 2)).astype(np.float32)
    np.testing.assert_allclose(_run(model, x, w), _ort(model, {"x": x, "w": w})[0], atol=1e-5, rtol=1e-5)
    # without kernel_shape the output_shape rule cannot be worked out: a clean refusal naming the node
    bare = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 1], output_shape=[9, 5])
    model = _model([bare], [_dynamic("x", ["N", 2, 4, 4]), _dynamic("w", [2, 3, "kh", "kw"])],
                   [_dynamic("y", None)], 17)
    with pytest.raises(OnnxImportError, match=r"node 'up'.*output_shape needs the kernel size.*'w'"):
        generate(model)


def test_same_padding_needs_the_spatial_dims():
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", auto_pad="SAME_UPPER")],
                   [_dynamic("x", ["N", 2, "H", 5])], [_dynamic("y", None)], 17,
                   [numpy_helper.from_array(np.ones((1, 2, 3, 3), np.float32), "w")])
    with pytest.raises(OnnxImportError, match=r"node 'c'.*auto_pad=SAME_UPPER without static spatial input dims"):
        generate(model)


# -- Einsum beyond the node cases, and refusals ---------------------------------------------------
@pytest.mark.parametrize("equation, shapes, dtype", [
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)], np.float32),  # broadcast batch dims
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], np.int64),             # exact integers
    ("ii->i", [(4, 4)], np.float32),
    ("ij,jk,kl", [(2, 3), (3, 4), (4, 2)], np.float32),             # implicit output, three operands
])
def test_einsum_matches_numpy(equation, shapes, dtype):
    arrays = [(RNG.standard_normal(s) * 5).astype(dtype) for s in shapes]
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.INT64
    names = [f"x{i}" for i in range(len(arrays))]
    model = _model([helper.make_node("Einsum", names, ["y"], equation=equation)],
                   [helper.make_tensor_value_info(n, elem, list(a.shape)) for n, a in zip(names, arrays)],
                   [helper.make_tensor_value_info("y", elem, None)], 17)
    np.testing.assert_allclose(_run(model, *arrays), np.einsum(equation, *arrays), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op_type, attrs, message", [
    ("Resize", {"mode": "area"}, "Resize mode='area'"),
    ("Resize", {"coordinate_transformation_mode": "bogus"}, "coordinate_transformation_mode='bogus'"),
    ("GridSample", {"padding_mode": "wrap"}, "GridSample padding_mode='wrap'"),
    ("Einsum", {"equation": "ij->i-j"}, "Einsum equation 'ij->i-j'"),
    ("LpNormalization", {"p": 3}, "LpNormalization p=3"),
])
def test_bad_attributes_are_refused_naming_the_node(op_type, attrs, message):
    inputs = {"Resize": ["x", "", "s"], "GridSample": ["x", "g"], "Einsum": ["x"], "LpNormalization": ["x"]}
    init = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")]
    model = _model([helper.make_node(op_type, inputs[op_type], ["y"], name="n", **attrs)],
                   [_dynamic("x", [1, 1, 2, 2]), _dynamic("g", [1, 2, 2, 2])], [_dynamic("y", None)], 20, init)
    with pytest.raises(OnnxImportError, match=rf"node 'n'.*{message}"):
        generate(model)


@pytest.mark.parametrize("mode, padding, corners", [("linear", "zeros", 0), ("cubic", "border", 1),
                                                    ("linear", "reflection", 0), ("cubic", "reflection", 0)])
def test_grid_sample_gradients_reach_input_and_grid_as_in_torch(mode, padding, corners):
    x = RNG.standard_normal((2, 3, 5, 4)).astype(np.float32)
    grid = (RNG.uniform(-1.3, 1.3, (2, 6, 7, 2))).astype(np.float32)  # some positions outside
    weights = RNG.standard_normal((2, 3, 6, 7)).astype(np.float32)
    vi = helper.make_tensor_value_info
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=corners)
    model = _model([node], [vi("x", TensorProto.FLOAT, list(x.shape)), vi("g", TensorProto.FLOAT, list(grid.shape))],
                   [vi("y", TensorProto.FLOAT, None)], 20)
    tx, tg = torch.from_numpy(x).requires_grad_(), torch.from_numpy(grid).requires_grad_()
    torch_mode = {"linear": "bilinear", "cubic": "bicubic"}[mode]
    ty = torch.nn.functional.grid_sample(tx, tg, mode=torch_mode, padding_mode=padding, align_corners=bool(corners))
    (ty * torch.from_numpy(weights)).sum().backward()
    B = Autodiff[NdArray]
    bx, bg = Tensor[B, 4].from_data(x).require_grad(), Tensor[B, 4].from_data(grid).require_grad()
    y = build_model(model, backend=B)(bx, bg)
    np.testing.assert_allclose(y.to_numpy(), ty.detach().numpy(), atol=1e-5, rtol=1e-4)
    grads = (y * Tensor[B, 4].from_data(weights)).sum().backward()
    np.testing.assert_allclose(bx.grad(grads).to_numpy(), tx.grad.numpy(), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(bg.grad(grads).to_numpy(), tg.grad.numpy(), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool_matches_onnxruntime(p):
    """GlobalLpPool has no node case in the onnx package."""
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    vi = helper.make_tensor_value_info
    model = _model([helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)], [vi("x", TensorProto.FLOAT, [2, 3, 4, 5])],
                   [vi("y", TensorProto.FLOAT, [2, 3, 1, 1])], 17)
    np.testing.assert_allclose(_run(model, x), _ort(model, {"x": x})[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("equation", ["i.j->ij", "ij;jk", "i..j->ij"])
def test_a_malformed_einsum_is_refused_before_onnx_shape_inference(equation, tmp_path):
    """onnx's shape inference never returns on `"i.j->ij"`: the importer must
    refuse such a file, naming the node, instead of hanging (checked in a
    child process, so a hang fails the test rather than the run)."""
    model = _model([helper.make_node("Einsum", ["x", "x"], ["y"], name="bad", equation=equation)],
                   [_dynamic("x", [2, 3])], [_dynamic("y", None)], 17)
    path = tmp_path / "einsum.onnx"
    onnx.save(model, str(path))
    script = ("import sys\nfrom burnbook.importer.onnx import OnnxImportError, build_model\n"
              "try:\n    build_model(sys.argv[1])\nexcept OnnxImportError as err:\n    print(err)\n")
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "node 'bad'" in proc.stdout and "Einsum equation" in proc.stdout, proc.stdout
