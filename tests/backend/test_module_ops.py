"""Module ops (conv, pooling, embedding) against torch.nn.functional, forward
and backward, on random configurations.

Backends: Autodiff[NdArray] (NdArray's NumPy overrides), Autodiff[Taichi]
(the protocol-only defaults of `ModuleOps`, tiny sizes) and
Autodiff[StrictDefaults]: NdArray behind opaque primitives that check every
protocol call, running the defaults, so a default or a backward rule that
steps outside the protocol fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Int, Tensor
from burnbook.autodiff import Autodiff, check_grad
from burnbook.autodiff.ops import TABLE
from burnbook.backend import NdArray
from burnbook.backend.base import MODULE_OPS
from burnbook.backend.module_ops import ModuleOps
from burnbook.tensor import module as F
from burnbook.tensor.ops import ConvOptions, ConvTransposeOptions

from ..autodiff.strict import Strict

torch = pytest.importorskip("torch")
Fn = torch.nn.functional

# The defaults of ModuleOps on Strict (whose own module ops wrap NdArray's).
StrictDefaults = type("StrictDefaults", (Strict,), {op: ModuleOps.__dict__[op] for op in MODULE_OPS})
TOL = dict(rtol=1e-4, atol=1e-4)


def _taichi():
    try:
        from burnbook.backend.taichi import Taichi
    except ImportError as err:  # pragma: no cover
        pytest.skip(f"Taichi backend not importable: {err}")
    return Taichi


INNER = {"ndarray": lambda: NdArray, "taichi": _taichi, "defaults": lambda: StrictDefaults}


@pytest.fixture(scope="module", params=list(INNER))
def mb(request):
    """(name, Autodiff backend) under test."""
    return request.param, Autodiff[INNER[request.param]()]


def n_cases(name: str) -> int:
    return 3 if name == "taichi" else 10


def check_torch(B, ours, theirs, *arrays, seed=0):
    """Forward, indices (if any) and the gradient of sum(out * R) w.r.t.
    every input, ours (f32) against torch (f64)."""
    xs = [Tensor[B, a.ndim].from_data(a.astype(np.float32)).require_grad() for a in arrays]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out, ref = ours(*xs), theirs(*ts)
    if isinstance(ref, tuple):
        (out, idx), (ref, ref_idx) = out, ref
        assert idx.kind is Int and idx.dims() == list(ref_idx.shape)
        np.testing.assert_array_equal(idx.to_numpy(), ref_idx.numpy())
    assert out.dims() == list(ref.shape)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), **TOL)
    r = np.random.default_rng(seed).standard_normal(out.dims())
    grads = (out * Tensor[B, out.ndim].from_data(r)).sum().backward()
    (ref * torch.tensor(r)).sum().backward()
    for i, (x, t) in enumerate(zip(xs, ts)):
        np.testing.assert_allclose(x.grad(grads).to_numpy(), t.grad.numpy(), err_msg=f"grad of input {i}", **TOL)


# -- random configurations --------------------------------------------------------------------

def conv_case(rng, dims: int, transpose: bool, tiny: bool):
    while True:
        g = int(rng.integers(1, 3))
        cin, cout = g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3))
        k, s, d, p = (rng.integers(1, 4, dims), rng.integers(1, 3, dims),
                      rng.integers(1, 3, dims), rng.integers(0, 3, dims))
        size = rng.integers(1, 5 if tiny else 8, dims)
        po = np.array([int(rng.integers(0, max(ss, dd))) for ss, dd in zip(s, d)])
        if transpose:
            out = (size - 1) * s - 2 * p + d * (k - 1) + po + 1
        else:
            out = (size + 2 * p - d * (k - 1) - 1) // s + 1
        if (out >= 1).all():
            break
    n = int(rng.integers(1, 3))
    x = rng.standard_normal((n, cin, *size))
    wshape = (cin, cout // g, *k) if transpose else (cout, cin // g, *k)
    w = rng.standard_normal(wshape)
    b = rng.standard_normal(cout) if rng.random() < 0.7 else None
    cfg = dict(stride=tuple(map(int, s)), padding=tuple(map(int, p)), dilation=tuple(map(int, d)), groups=g)
    if transpose:
        cfg["output_padding"] = tuple(map(int, po))
    return x, w, b, cfg


@pytest.mark.parametrize("dims", [1, 2])
def test_conv_matches_torch(mb, dims):
    name, B = mb
    rng = np.random.default_rng(10 + dims)
    ours_fn, torch_fn = (F.conv1d, Fn.conv1d) if dims == 1 else (F.conv2d, Fn.conv2d)
    for case in range(n_cases(name)):
        x, w, b, cfg = conv_case(rng, dims, False, name == "taichi")
        opts = ConvOptions(cfg["stride"], cfg["padding"], cfg["dilation"], cfg["groups"])
        arrays = (x, w) if b is None else (x, w, b)
        check_torch(B, lambda x, w, *b: ours_fn(x, w, b[0] if b else None, opts),
                    lambda x, w, *b: torch_fn(x, w, b[0] if b else None, **cfg), *arrays, seed=case)


@pytest.mark.parametrize("dims", [1, 2])
def test_conv_transpose_matches_torch(mb, dims):
    name, B = mb
    rng = np.random.default_rng(20 + dims)
    ours_fn, torch_fn = (F.conv_transpose1d, Fn.conv_transpose1d) if dims == 1 else \
        (F.conv_transpose2d, Fn.conv_transpose2d)
    for case in range(n_cases(name)):
        x, w, b, cfg = conv_case(rng, dims, True, name == "taichi")
        opts = ConvTransposeOptions(cfg["stride"], cfg["padding"], cfg["output_padding"], cfg["dilation"],
                                    cfg["groups"])
        arrays = (x, w) if b is None else (x, w, b)
        check_torch(B, lambda x, w, *b: ours_fn(x, w, b[0] if b else None, opts),
                    lambda x, w, *b: torch_fn(x, w, b[0] if b else None, **cfg), *arrays, seed=case)


def pool_case(rng, dims: int, max_pool: bool, tiny: bool):
    while True:
        k, s = rng.integers(1, 4, dims), rng.integers(1, 4, dims)
        d = rng.integers(1, 3, dims) if max_pool else np.ones(dims, dtype=int)
        p = np.array([int(rng.integers(0, kk // 2 + 1)) for kk in k])
        size = rng.integers(1, 6 if tiny else 9, dims)
        ceil = bool(rng.random() < 0.5) and max_pool
        span = size + 2 * p - d * (k - 1) - 1
        if (span >= 0).all():
            break
    x = rng.standard_normal((int(rng.integers(1, 3)), int(rng.integers(1, 3)), *size))
    as_t = lambda a: tuple(int(v) for v in a)  # noqa: E731
    return x, as_t(k), as_t(s), as_t(p), as_t(d), ceil


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("indices", [False, True])
def test_max_pool_matches_torch(mb, dims, indices):
    name, B = mb
    rng = np.random.default_rng(30 + dims + 2 * indices)
    ours_fn = {(1, False): F.max_pool1d, (2, False): F.max_pool2d,
               (1, True): F.max_pool1d_with_indices, (2, True): F.max_pool2d_with_indices}[dims, indices]
    torch_fn = Fn.max_pool1d if dims == 1 else Fn.max_pool2d
    for case in range(n_cases(name) + 2):
        x, k, s, p, d, ceil = pool_case(rng, dims, True, name == "taichi")
        check_torch(B, lambda x: ours_fn(x, k, s, p, d, ceil),
                    lambda x: torch_fn(x, k, s, p, d, ceil_mode=ceil, return_indices=indices), x, seed=case)


def test_max_pool_overlapping_windows_share_a_max(mb):
    """A max in several windows collects every window's gradient."""
    _, B = mb
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = 5.0
    check_torch(B, lambda x: F.max_pool2d(x, 3, 1, 1), lambda x: Fn.max_pool2d(x, 3, 1, 1), x)


@pytest.mark.parametrize("dims", [1, 2])
def test_avg_pool_matches_torch(mb, dims):
    name, B = mb
    rng = np.random.default_rng(40 + dims)
    ours_fn, torch_fn = (F.avg_pool1d, Fn.avg_pool1d) if dims == 1 else (F.avg_pool2d, Fn.avg_pool2d)
    for case in range(n_cases(name) + 2):
        x, k, s, p, _, _ = pool_case(rng, dims, False, name == "taichi")
        cip = case % 2 == 0
        check_torch(B, lambda x: ours_fn(x, k, s, p, cip),
                    lambda x: torch_fn(x, k, s, p, count_include_pad=cip), x, seed=case)


@pytest.mark.parametrize("dims", [1, 2])
def test_adaptive_avg_pool_matches_torch(mb, dims):
    name, B = mb
    rng = np.random.default_rng(50 + dims)
    ours_fn, torch_fn = (F.adaptive_avg_pool1d, Fn.adaptive_avg_pool1d) if dims == 1 else \
        (F.adaptive_avg_pool2d, Fn.adaptive_avg_pool2d)
    for case in range(n_cases(name)):
        x = rng.standard_normal((2, 2, *rng.integers(1, 8, dims)))
        out = tuple(int(v) for v in rng.integers(1, 6, dims))  # also larger than the input
        check_torch(B, lambda x: ours_fn(x, out), lambda x: torch_fn(x, out), x, seed=case)


def test_embedding_matches_torch(mb):
    _, B = mb
    rng = np.random.default_rng(6)
    ids = np.array([[0, 3, 3], [4, 1, 3]])
    index = Tensor[B, 2, Int].from_data(ids)
    check_torch(B, lambda w: F.embedding(w, index), lambda w: Fn.embedding(torch.tensor(ids), w),
                rng.standard_normal((5, 4)))


def test_untracked_inputs_build_no_graph(mb):
    """On an autodiff backend, untracked inputs give an untracked output."""
    _, B = mb
    rng = np.random.default_rng(7)
    x = Tensor[B, 4].from_data(rng.standard_normal((1, 2, 5, 5)))
    w = Tensor[B, 4].from_data(rng.standard_normal((2, 2, 3, 3)))
    y = F.conv2d(x, w, None, ConvOptions(1, 1))
    out, idx = F.max_pool2d_with_indices(y, 2)
    assert out.into_primitive().node is None and y.into_primitive().node is None
    ref = Fn.max_pool2d(Fn.conv2d(torch.tensor(x.to_numpy()), torch.tensor(w.to_numpy()), padding=1), 2)
    np.testing.assert_allclose(out.to_numpy(), ref.numpy(), **TOL)


def test_plain_backends_forward(backend):
    """The plain backends (no autodiff) run the same forward."""
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((2, 2, 6, 5)), rng.standard_normal((4, 1, 2, 3))
    y = F.conv2d(Tensor[backend, 4].from_data(x), Tensor[backend, 4].from_data(w), None,
                 ConvOptions(1, (1, 0), 1, 2))
    y = F.avg_pool2d(F.max_pool2d(y, 2, 1, ceil_mode=True), 2, 1, 1, False)
    ref = Fn.avg_pool2d(Fn.max_pool2d(Fn.conv2d(torch.tensor(x), torch.tensor(w), None, 1, (1, 0), 1, 2), 2, 1,
                                      ceil_mode=True), 2, 1, 1, count_include_pad=False)
    np.testing.assert_allclose(y.to_numpy(), ref.numpy(), **TOL)


# -- gradients: finite differences and second derivatives ----------------------------------------

FD_CASES = {
    "conv2d": lambda x, w, b: F.conv2d(x, w, b, ConvOptions(2, 1, (1, 2), 2)),
    "conv_transpose2d": lambda x, w, b: F.conv_transpose2d(x, w.reshape([4, 1, 2, 2]),
                                                           b, ConvTransposeOptions(2, 1, 1, 1, 2)),
    "pools": lambda x, w, b: (F.max_pool2d(x, 2, 1, 1, 1, True).sum_dim(3).sum_dim(2)
                              + F.avg_pool2d(x, 3, 2, 1, False).sum_dim(3).sum_dim(2)
                              + F.adaptive_avg_pool2d(x, (2, 3)).sum_dim(3).sum_dim(2)),
}


@pytest.mark.parametrize("case", list(FD_CASES))
def test_finite_differences(mb, case):
    name, B = mb
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 4, 5, 4))
    w = rng.standard_normal((2, 2, 2, 2))
    b = rng.standard_normal(2)
    t = [Tensor[B, a.ndim].from_data(a.astype(np.float64)) for a in (x, w, b)]
    if case == "pools":
        check_grad(lambda x: FD_CASES[case](x, None, None), t[0])
    else:
        check_grad(FD_CASES[case], *t)


@pytest.mark.parametrize("op", ["conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"])
def test_double_backward_matches_torch(op):
    """d/d(x, w) of sum(grad_x(sum(f(x, w) * R)) * V): gradients of gradients."""
    B = Autodiff[NdArray]
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((2, 4, 5, 5)), rng.standard_normal((4, 2, 3, 2))
    fns = {
        "conv2d": (lambda x, w: F.conv2d(x, w, None, ConvOptions(2, 1, 1, 2)),
                   lambda x, w: Fn.conv2d(x, w, None, 2, 1, 1, 2)),
        "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, None, ConvTransposeOptions(2, 1, 1, 1, 2)),
                             lambda x, w: Fn.conv_transpose2d(x, w, None, 2, 1, 1, 2)),
        "max_pool2d": (lambda x, w: F.max_pool2d(x * x, 3, 2, 1), lambda x, w: Fn.max_pool2d(x * x, 3, 2, 1)),
        "avg_pool2d": (lambda x, w: F.avg_pool2d(x * x, 3, 2, 1, False),
                       lambda x, w: Fn.avg_pool2d(x * x, 3, 2, 1, count_include_pad=False)),
        "adaptive_avg_pool2d": (lambda x, w: F.adaptive_avg_pool2d(x * x, (3, 2)),
                                lambda x, w: Fn.adaptive_avg_pool2d(x * x, (3, 2))),
    }
    ours, theirs = fns[op]
    xs = [Tensor[B, 4].from_data(a).require_grad() for a in (x, w)]
    out = ours(*xs)
    r = rng.standard_normal(out.dims())
    v = rng.standard_normal(x.shape)
    g1 = (out * Tensor[B, 4].from_data(r)).sum().backward(create_graph=True)
    g2 = (xs[0].grad(g1) * Tensor[B, 4].from_data(v)).sum().backward()

    ts = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    (gx,) = torch.autograd.grad((theirs(*ts) * torch.tensor(r)).sum(), ts[0], create_graph=True)
    (gx * torch.tensor(v)).sum().backward()
    for ours_t, ref in zip(xs, ts):
        if ref.grad is None:
            continue
        got = ours_t.grad(g2)
        np.testing.assert_allclose(got.to_numpy() if got is not None else 0.0, ref.grad.numpy(), **TOL)


# -- protocol coverage and errors ------------------------------------------------------------------

def test_every_module_op_has_a_rule_and_a_default():
    assert [op for op in MODULE_OPS if op not in TABLE] == []
    assert [op for op in MODULE_OPS if op not in ModuleOps.__dict__] == []
    assert Autodiff[NdArray].missing_ops() == [] and NdArray.missing_ops() == []


ERRORS = [
    (lambda B: F.conv2d(_t(B, 1, 3, 5, 5), _t(B, 4, 2, 3, 3)), "x .* has 3 channels, but weight .*expects 2"),
    (lambda B: F.conv2d(_t(B, 1, 4, 5, 5), _t(B, 3, 2, 3, 3), None, ConvOptions(groups=2)),
     "3 output channels, not divisible by groups=2"),
    (lambda B: F.conv2d(_t(B, 1, 2, 2, 2), _t(B, 4, 2, 3, 3)),
     r"kernel \[3, 3\] is larger than the padded input \[2, 2\] \(x \[1, 2, 2, 2\], padding \[0, 0\]\)"),
    (lambda B: F.conv2d(_t(B, 1, 2, 5, 5), _t(B, 4, 2, 3, 3), _t(B, 3)), r"bias \[3\] must have shape \[4\]"),
    (lambda B: F.conv2d(_t(B, 2, 5, 5), _t(B, 4, 2, 3, 3)), "x must have rank 4 .batch, channels, height, width."),
    (lambda B: F.conv2d(_t(B, 1, 2, 5, 5), _t(B, 4, 2, 3, 3), None, ConvOptions(stride=0)), "stride must be >= 1"),
    (lambda B: F.conv2d(_t(B, 1, 2, 5, 5), _t(B, 4, 2, 3, 3), None, ConvOptions(stride=(1, 1, 1))),
     "stride: expected 2 value"),
    (lambda B: F.conv_transpose2d(_t(B, 1, 2, 5, 5), _t(B, 3, 2, 3, 3)), "has 2 channels, but weight .* expects 3"),
    (lambda B: F.conv_transpose2d(_t(B, 1, 2, 5, 5), _t(B, 2, 2, 3, 3), None, ConvTransposeOptions(padding_out=1)),
     "padding_out .* must be smaller than the stride"),
    (lambda B: F.max_pool2d(_t(B, 1, 1, 2, 2), 3), r"kernel \[3, 3\] is larger than the padded input"),
    (lambda B: F.max_pool2d(_t(B, 1, 1, 6, 6), 2, 2, 2), "padding .* must be between 0 and half the kernel"),
    (lambda B: F.avg_pool1d(_t(B, 1, 1, 6), 0), "must be >= 1"),
    (lambda B: F.adaptive_avg_pool2d(_t(B, 1, 1, 6, 6), (0, 2)), "output_size .* must be >= 1"),
    (lambda B: F.conv2d(_t(B, 1, 2, 5, 5).int(), _t(B, 4, 2, 3, 3)), "x must be a Float tensor, got Int"),
    (lambda B: F.embedding(_t(B, 4, 3), _t(B, 2, 2)), "indices must be a Int tensor"),
]


def _t(B, *shape):
    return Tensor[B, len(shape)].zeros(list(shape))


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_name_the_shapes(i):
    fn, pattern = ERRORS[i]
    with pytest.raises((ValueError, TypeError), match=pattern):
        fn(Autodiff[NdArray])
