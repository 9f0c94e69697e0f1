"""The element-wise operator family (`ops/elementwise`, `runtime/elementwise`)
beyond what the onnx node test cases reach: a PyTorch export using
MobileNetV3's HardSwish/HardSigmoid, PReLU and the ELU family against torch;
the composed math helpers against NumPy over wide inputs, and their
gradients against torch; Mod's sign rules and broadcasting against NumPy;
bitwise wrapping in the ONNX element type; and the refusals."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from burnbook import Int, Tensor  # noqa: E402
from burnbook.autodiff import Autodiff  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model, generate  # noqa: E402
from burnbook.importer.onnx import runtime as onnx_ops  # noqa: E402

RNG = np.random.default_rng(7)


def _model(nodes, inputs, outputs, opset=17, initializers=()):
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers)),
                             opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _tensor(array: np.ndarray, B=NdArray):
    kind = Int if array.dtype.kind in "iu" else None
    return Tensor[B, array.ndim, kind].from_data(array) if kind else Tensor[B, array.ndim].from_data(array)


# -- a PyTorch export --------------------------------------------------------------------------
def test_torch_export_with_hard_swish_prelu_and_elus_matches_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.prelu = torch.nn.PReLU(4)

        def forward(self, x):
            y = self.conv(x)
            mixed = F.elu(y) + F.selu(y) + F.celu(y, 1.5) + F.softplus(y) + F.softsign(y) + F.mish(y)
            mask = (y > 0.1) & (y <= 0.5) | ~(y < -0.2)
            return (F.hardswish(y), F.hardsigmoid(y), self.prelu(y), mixed,
                    torch.maximum(F.hardswish(y), self.prelu(y)), mask, torch.fmod(y, 0.3))

    torch.manual_seed(0)
    net = Block().eval()
    with torch.no_grad():  # a slope per channel, negative and above 1 included
        net.prelu.weight.copy_(torch.tensor([0.1, -0.3, 0.25, 2.0]))
    x = torch.randn(2, 3, 8, 8) * 3
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (x,), buf, dynamo=False, opset_version=17)
    proto = onnx.load_from_string(buf.getvalue())
    assert {"HardSwish", "HardSigmoid", "PRelu", "Celu", "Max", "Mod"} <= {n.op_type for n in proto.graph.node}
    source = generate(proto).source
    assert "activation.hard_sigmoid(" in source and ".greater_elem(" in source
    outs = build_model(proto, backend=NdArray)(Tensor[NdArray, 4].from_data(x.numpy()))
    with torch.no_grad():
        expected = net(x)
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


# -- the composed math against NumPy -------------------------------------------------------------
_WIDE = np.concatenate([
    RNG.uniform(-4, 4, 3000), RNG.uniform(-1e-3, 1e-3, 300), np.ldexp(1.0, np.arange(-60, 100, 7)),
    -np.ldexp(1.0, np.arange(-60, 100, 7)), np.arange(-6, 6.5, 0.5),  # the halves, where Round ties
    [0.0, -0.0, 4194304.5, 8388607.5, 8388608.0, 3e38, 1e-40, 88.5, -89.0, np.inf, -np.inf, np.nan],
]).astype(np.float32)
_UNIT = np.concatenate([RNG.uniform(-1, 1, 2000), [-1, 1, 0, 1e-7, -1e-7, 0.999999, -0.999999, 1.5, -3]])
_ABOVE_ONE = np.concatenate([RNG.uniform(1, 6, 1000), [1, 1 + 2 ** -23, 1e10, 3e38, np.inf, 0.5]])
MATH = [  # (helper, NumPy function, inputs)
    ("round_even", np.round, _WIDE), ("floor", np.floor, _WIDE), ("ceil", np.ceil, _WIDE),
    ("tan", np.tan, _WIDE[np.abs(_WIDE) < 1e4]), ("atan", np.arctan, _WIDE), ("sinh", np.sinh, _WIDE),
    ("cosh", np.cosh, _WIDE), ("asinh", np.arcsinh, _WIDE), ("asin", np.arcsin, _UNIT), ("acos", np.arccos, _UNIT),
    ("atanh", np.arctanh, _UNIT), ("acosh", np.arccosh, _ABOVE_ONE),
]


@pytest.mark.parametrize("name, reference, x", MATH, ids=[m[0] for m in MATH])
def test_math_helpers_match_numpy_over_wide_inputs(name, reference, x):
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        got = getattr(onnx_ops, name)(_tensor(x)).to_numpy()
        want = reference(x.astype(np.float64)).astype(np.float32)  # the correctly rounded f32 result
    np.testing.assert_allclose(got, want, rtol=4e-6, atol=0, equal_nan=True, err_msg=name)


def test_composed_helpers_differentiate_as_torch():
    torch = pytest.importorskip("torch")
    B = Autodiff[NdArray]
    x = RNG.uniform(-0.9, 0.9, 64).astype(np.float32)
    cases = [("atan", torch.atan), ("asin", torch.asin), ("acos", torch.acos), ("sinh", torch.sinh),
             ("asinh", torch.asinh), ("atanh", torch.atanh), ("elu", torch.nn.functional.elu)]
    for name, fn in cases:
        t = Tensor[B, 1].from_data(x).require_grad()
        ours = getattr(onnx_ops, name)(t).sum().backward()
        tt = torch.tensor(x, requires_grad=True)
        fn(tt).sum().backward()
        np.testing.assert_allclose(t.grad(ours).to_numpy(), tt.grad.numpy(), rtol=2e-5, atol=1e-6, err_msg=name)
    # Floor is piecewise constant: x * floor(x) has gradient floor(x)
    t = Tensor[B, 1].from_data(x * 4).require_grad()
    grads = (t * onnx_ops.floor(t)).sum().backward()
    np.testing.assert_array_equal(t.grad(grads).to_numpy(), np.floor(x * 4))


# -- Mod -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("elem", [TensorProto.INT64, TensorProto.FLOAT])
def test_mod_follows_the_sign_rules_and_broadcasts(fmod, elem):
    dtype = np.int64 if elem == TensorProto.INT64 else np.float32
    a = RNG.integers(-20, 21, (3, 4)).astype(dtype) + (0 if dtype is np.int64 else np.float32(0.25))
    b = np.array([3, -3, 7, -2], dtype=dtype)
    model = _model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod),
                    helper.make_node("Mod", ["a", "c"], ["z"], fmod=fmod)],
                   [_vi("a", elem, [3, 4]), _vi("b", elem, [4])], [_vi("y", elem, [3, 4]), _vi("z", elem, [3, 4])],
                   initializers=[helper.make_tensor("c", elem, [], [-4])])
    y, z = build_model(model, backend=NdArray)(_tensor(a), _tensor(b))
    rule = np.fmod if fmod else np.mod  # fmod: the dividend's sign; else Python's, the divisor's
    np.testing.assert_allclose(y.to_numpy(), rule(a, b), rtol=1e-6)
    np.testing.assert_allclose(z.to_numpy(), rule(a, dtype(-4)), rtol=1e-6)
    assert (z.to_numpy() <= 0).all() if not fmod else ((z.to_numpy() * a >= 0).all())


# -- bitwise, variadic, comparisons ---------------------------------------------------------------
def test_bitwise_ops_wrap_in_the_onnx_element_type():
    a = np.array([0, 1, 200, 255], dtype=np.uint8)
    s = np.array([1, 3, 1, 7], dtype=np.uint8)
    model = _model([helper.make_node("BitwiseNot", ["a"], ["n"]),
                    helper.make_node("BitShift", ["a", "s"], ["l"], direction="LEFT")],
                   [_vi("a", TensorProto.UINT8, [4]), _vi("s", TensorProto.UINT8, [4])],
                   [_vi("n", TensorProto.UINT8, [4]), _vi("l", TensorProto.UINT8, [4])], opset=18)
    n, left = build_model(model, backend=NdArray)(_tensor(a.astype(np.int64)), _tensor(s.astype(np.int64)))
    np.testing.assert_array_equal(n.to_numpy(), np.invert(a))  # 255 - a, not -a - 1
    np.testing.assert_array_equal(left.to_numpy(), np.left_shift(a, s))  # 200 << 1 drops its top bit
    # uint64 past 2**63 lives wrapped in the i64; the right shift is still logical
    big = np.array([2 ** 63 + 8], dtype=np.uint64)
    shifted = onnx_ops.bitwise_right_shift(_tensor(big.astype(np.int64)), _tensor(np.array([2])), "uint64")
    assert shifted.to_numpy().astype(np.uint64)[0] == (2 ** 63 + 8) >> 2


def test_max_min_mean_broadcast_three_ranks_and_propagate_nan():
    shapes = [(2, 1, 3), (4, 1), (3,)]
    xs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    xs[1][2, 0] = np.nan
    names = ["a", "b", "c"]
    out = [_vi(o, TensorProto.FLOAT, [2, 4, 3]) for o in ("mx", "mn", "me")]
    model = _model([helper.make_node(op, names, [o]) for op, o in (("Max", "mx"), ("Min", "mn"), ("Mean", "me"))],
                   [_vi(n, TensorProto.FLOAT, list(s)) for n, s in zip(names, shapes)], out)
    mx, mn, me = build_model(model, backend=NdArray)(*[_tensor(x) for x in xs])
    np.testing.assert_array_equal(mx.to_numpy(), np.maximum(np.maximum(xs[0], xs[1]), xs[2]))
    np.testing.assert_array_equal(mn.to_numpy(), np.minimum(np.minimum(xs[0], xs[1]), xs[2]))
    np.testing.assert_allclose(me.to_numpy(), (xs[0] + xs[1] + xs[2]) / 3, rtol=1e-6)
    assert np.isnan(mx.to_numpy()[:, 2]).all()


def test_constant_operands_become_numbers_on_either_side():
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    x[1, 1] = np.nan
    half = helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])
    model = _model([helper.make_node("Less", ["half", "x"], ["y"]),  # 0.5 < x
                    helper.make_node("GreaterOrEqual", ["x", "half"], ["z"]),
                    helper.make_node("IsInf", ["x"], ["w"], detect_positive=0, detect_negative=0),
                    helper.make_node("Max", ["half", "x"], ["m"])],
                   [_vi("x", TensorProto.FLOAT, [2, 5])],
                   [_vi(n, TensorProto.BOOL, [2, 5]) for n in "yzw"] + [_vi("m", TensorProto.FLOAT, [2, 5])],
                   initializers=[half])
    source = generate(model).source
    assert ".greater_elem(0.5)" in source and ".greater_equal_elem(0.5)" in source and ".clamp_min(0.5)" in source
    y, z, w, m = build_model(model, backend=NdArray)(_tensor(x))
    np.testing.assert_array_equal(y.to_numpy(), 0.5 < x)
    np.testing.assert_array_equal(z.to_numpy(), x >= 0.5)
    assert not w.to_numpy().any()
    np.testing.assert_array_equal(m.to_numpy(), np.maximum(0.5, x))  # NaN stays NaN


def test_swish_of_opset_24_takes_alpha():
    if "Swish" not in {s.name for s in onnx.defs.get_all_schemas()}:
        pytest.skip("this onnx has no Swish schema")
    x = RNG.standard_normal(16).astype(np.float32)
    model = _model([helper.make_node("Swish", ["x"], ["y"], alpha=1.7)], [_vi("x", TensorProto.FLOAT, [16])],
                   [_vi("y", TensorProto.FLOAT, [16])], opset=24)
    y = build_model(model, backend=NdArray)(_tensor(x)).to_numpy()
    np.testing.assert_allclose(y, x / (1 + np.exp(-1.7 * x)), rtol=1e-6)


# -- refusals ----------------------------------------------------------------------------------------
def test_what_burnbook_cannot_hold_or_onnx_does_not_define_is_refused_by_node():
    x = _vi("x", TensorProto.FLOAT, [3])
    words = helper.make_tensor("words", TensorProto.STRING, [1], [b"a"])
    bad = _model([helper.make_node("CastLike", ["x", "words"], ["s"], name="to_text"),
                  helper.make_node("Cast", ["x"], ["i"], to=TensorProto.UINT8),
                  helper.make_node("BitShift", ["i", "i"], ["j"], name="shift", direction="UP"),
                  helper.make_node("Mod", ["x", "x"], ["m"], name="mod", fmod=2)],
                 [x], [_vi("j", TensorProto.UINT8, [3]), _vi("m", TensorProto.FLOAT, [3])], initializers=[words])
    with pytest.raises(OnnxImportError) as err:
        generate(bad)
    text = str(err.value)
    assert "node 'to_text' (CastLike): CastLike to the type of 'words', string, which burnbook" in text
    assert "node 'shift' (BitShift): BitShift direction='UP' (ONNX defines LEFT, RIGHT)" in text
    assert "node 'mod' (Mod): Mod fmod=2 (ONNX defines 0 and 1)" in text
