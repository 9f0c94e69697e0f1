"""The Taichi backend's own conv and pool kernels (ops/module_ops.py) against
torch.nn.functional, forward and backward through Autodiff[Taichi], on a grid
of strides, paddings, dilations, groups and ceil modes, in f32 and f64; both
conv variants (im2col + matmul, direct) against each other; and the conv
autotuner's table on disk.

Runs on the arch BURNBOOK_TAICHI_ARCH names (cpu by default; vulkan too).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.autodiff import Autodiff
from burnbook.tensor import module as F
from burnbook.tensor.ops import ConvOptions, ConvTransposeOptions

torch = pytest.importorskip("torch")
Fn = torch.nn.functional


@pytest.fixture(scope="module")
def T():
    from .conftest import BACKENDS

    return BACKENDS["taichi"]()


@pytest.fixture(scope="module")
def AD(T):
    return Autodiff[T]


@pytest.fixture(autouse=True)
def _tuning_file(tmp_path, monkeypatch):
    """Every test tunes into its own file, never the user's cache."""
    from burnbook.backend.taichi import autotune

    monkeypatch.setenv("BURNBOOK_AUTOTUNE_CACHE", str(tmp_path / "autotune.json"))
    autotune.clear()
    yield
    autotune.clear()


DTYPES = {"f32": (np.float32, dict(rtol=1e-4, atol=1e-4)), "f64": (np.float64, dict(rtol=1e-9, atol=1e-9))}


def _f64_or_skip(T, dtype):
    from burnbook.backend.taichi import runtime

    T.float_from_data(np.zeros(1, np.float32), T.default_device())  # starts the runtime
    if dtype == np.float64 and not runtime.current.has_f64:
        pytest.skip("this device has no f64")


def check_torch(B, dtype, tol, ours, theirs, *arrays, seed=0):
    """ours(*tensors) against theirs(*torch tensors): the forward (and max-pool
    indices), and the gradient of sum(out * R) w.r.t. every input."""
    xs = [Tensor[B, a.ndim].from_data(a.astype(np.float32)).cast(dtype).require_grad() for a in arrays]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out, ref = ours(*xs), theirs(*ts)
    if isinstance(ref, tuple):
        (out, idx), (ref, ref_idx) = out, ref
        np.testing.assert_array_equal(idx.to_numpy(), ref_idx.numpy())
    assert out.to_numpy().dtype == dtype
    assert out.dims() == list(ref.shape)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), **tol)
    r = np.random.default_rng(seed).standard_normal(out.dims()).astype(np.float32).astype(np.float64)
    grads = (out * Tensor[B, out.ndim].from_data(r.astype(np.float32)).cast(dtype)).sum().backward()
    (ref * torch.tensor(r)).sum().backward()
    for i, (x, t) in enumerate(zip(xs, ts)):
        np.testing.assert_allclose(x.grad(grads).to_numpy(), t.grad.numpy(), err_msg=f"grad of input {i}", **tol)


COLUMNS = ["host", "kernel"]


def _columns_or_skip(T, columns):
    """Skip the host path where device memory is not host memory (GPU archs)."""
    from burnbook.backend.taichi import SETTINGS

    T.float_from_data(np.zeros(1, np.float32), T.default_device())  # starts the runtime
    if columns == "host" and SETTINGS.gpu:
        pytest.skip("the host column path needs the CPU arch")


def _data(*shapes, seed=0):
    """Inputs exactly representable in f32, so f32 and f64 runs see the same values."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32).astype(np.float64) for s in shapes]


# (batch, in, out, (h, w), kernel, stride, padding, dilation, groups)
CONV = [
    (2, 3, 4, (7, 6), (3, 3), (1, 1), (1, 1), (1, 1), 1),
    (2, 4, 6, (9, 8), (2, 3), (2, 1), (1, 0), (1, 2), 2),
    (1, 6, 6, (6, 7), (3, 3), (2, 2), (2, 1), (2, 1), 3),
    (2, 4, 4, (5, 5), (1, 1), (1, 1), (0, 0), (1, 1), 4),
    (1, 2, 3, (8, 5), (3, 2), (3, 2), (0, 1), (1, 1), 1),
    (3, 1, 8, (12, 10), (3, 3), (1, 1), (0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("variant,columns", [("im2col", "host"), ("im2col", "kernel"), ("direct", "host")])
@pytest.mark.parametrize("case", range(len(CONV)))
def test_conv2d_matches_torch(T, AD, dt, variant, columns, case):
    """Both conv variants, and the column matrix built on the host and by the
    kernel (`columns`; the direct kernel builds none, but its backward does)."""
    from burnbook.backend.taichi import SETTINGS

    dtype, tol = DTYPES[dt]
    _f64_or_skip(T, dtype)
    _columns_or_skip(T, columns)
    n, cin, cout, size, k, s, p, d, g = CONV[case]
    x, w, b = _data((n, cin, *size), (cout, cin // g, *k), (cout,), seed=case)
    opts = ConvOptions(s, p, d, g)
    with SETTINGS.override(conv=variant, columns=columns):
        check_torch(AD, dtype, tol, lambda x, w, b: F.conv2d(x, w, b, opts),
                    lambda x, w, b: Fn.conv2d(x, w, b, s, p, d, g), x, w, b, seed=case)


# (batch, in, out, (h, w), kernel, stride, padding, padding_out, dilation, groups)
CONV_T = [
    (2, 3, 4, (4, 5), (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1),
    (2, 4, 2, (3, 4), (2, 3), (2, 3), (0, 1), (1, 2), (1, 1), 2),
    (1, 2, 6, (5, 3), (3, 2), (2, 1), (1, 0), (0, 0), (2, 3), 2),
    (1, 3, 3, (4, 4), (1, 1), (3, 2), (0, 0), (2, 1), (1, 1), 3),
    (2, 4, 6, (5, 6), (2, 3), (1, 1), (0, 1), (1, 0), (2, 2), 2),   # unit stride, cropped grid
    (2, 3, 2, (4, 4), (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),   # unit stride, the whole grid
]


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("variant,columns", [("im2col", "host"), ("im2col", "kernel"), ("direct", "host")])
@pytest.mark.parametrize("case", range(len(CONV_T)))
def test_conv_transpose2d_matches_torch(T, AD, dt, variant, columns, case):
    """Its backward runs conv2d (the input grad) and conv2d's weight grad on
    the same output grad, so both conv2d variants are covered: the im2col one
    once reused that conv2d's column matrix for the weight grad although the
    input grad's conv2d is larger than the input (output_padding)."""
    from burnbook.backend.taichi import SETTINGS

    dtype, tol = DTYPES[dt]
    _f64_or_skip(T, dtype)
    _columns_or_skip(T, columns)
    n, cin, cout, size, k, s, p, po, d, g = CONV_T[case]
    x, w, b = _data((n, cin, *size), (cin, cout // g, *k), (cout,), seed=10 + case)
    opts = ConvTransposeOptions(s, p, po, d, g)
    with SETTINGS.override(conv=variant, columns=columns):
        check_torch(AD, dtype, tol, lambda x, w, b: F.conv_transpose2d(x, w, b, opts),
                    lambda x, w, b: Fn.conv_transpose2d(x, w, b, s, p, po, g, d), x, w, b, seed=case)


# (batch, channels, (h, w) of the tap planes, kernel, stride, padding, dilation):
# output rows shorter than 8, from 8, and from 16 wide, with edges on both sides
COL2IM = [
    (2, 3, (4, 5), (3, 3), (1, 1), (1, 1), (1, 1)),
    (1, 2, (3, 12), (2, 3), (2, 1), (0, 1), (1, 2)),
    (2, 2, (5, 24), (3, 3), (1, 1), (0, 0), (1, 1)),
    (1, 3, (2, 21), (3, 5), (3, 1), (1, 2), (2, 3)),
]


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("case", range(len(COL2IM)))
def test_col2im_variants_match_torch_fold(T, dt, case):
    """Each `_col2im` variant (tap by tap; gathering 8 or 16 outputs at a
    time) places the tap planes like torch's fold, plus the bias."""
    from burnbook.backend.taichi import primitive
    from burnbook.backend.taichi.ops import columns
    from burnbook.kernels import conv

    dtype, tol = DTYPES[dt]
    _f64_or_skip(T, dtype)
    n, c, (h, w), k, s, p, d = COL2IM[case]
    ho, wo = ((h - 1) * s[0] - 2 * p[0] + d[0] * (k[0] - 1) + 1, (w - 1) * s[1] - 2 * p[1] + d[1] * (k[1] - 1) + 1)
    cols, b = _data((n, c, *k, h, w), (c,), seed=60 + case)
    want = Fn.fold(torch.tensor(cols).reshape(n, c * k[0] * k[1], h * w), (ho, wo), k, d, p, s)
    want = (want + torch.tensor(b)[:, None, None]).numpy()
    dev = T.default_device()
    tc, tb = (T.float_from_data(a.astype(dtype), dev) for a in (cols, b))
    dims, window = (n, c, h, w, ho, wo), (*k, *s, *p, *d)
    got = {}
    for lanes in conv.COL2IM_LANES:
        out = primitive.alloc((n, c, ho, wo), np.dtype(dtype), dev)
        conv.col2im(out.buf, tc.buf, tb.buf, dims, window, lanes=lanes)
        got[f"lanes={lanes}"] = T.float_into_data(out)
    if columns.on_host():
        out = primitive.alloc((n, c, ho, wo), np.dtype(dtype), dev)
        columns.col2im(out.buf, tc.buf, tb.buf, dims, window)
        got["host"] = T.float_into_data(out)
        if s == (1, 1):
            wf = columns.grid(dims, window)[1]
            wide = np.zeros((n, c, *k, h, wf))
            wide[..., :w] = cols
            out = primitive.alloc((n, c, ho, wo), np.dtype(dtype), dev)
            columns.col2im_host(out.buf, T.float_from_data(wide.astype(dtype), dev).buf, tb.buf, dims, window,
                                rows=True)
            got["host rows"] = T.float_into_data(out)
    for name, value in got.items():
        np.testing.assert_allclose(value, want, err_msg=name, **tol)
    # Every path adds in the same order: the same sums, to the last bit.
    for name, value in got.items():
        np.testing.assert_array_equal(value, got["lanes=0"], err_msg=name)


@pytest.mark.parametrize("ones", [False, True])
def test_host_im2col_matches_the_kernel(T, ones):
    """The column matrix built on the host equals the kernel's, from a strided
    view with an offset, with padding, strides, dilation and groups (and each
    group's row of ones, the bias's, when `ones`)."""
    from burnbook.backend.taichi import SETTINGS, primitive
    from burnbook.backend.taichi.ops import columns as conv_columns

    _columns_or_skip(T, "host")
    n, c, g, (h, w), (kh, kw) = 2, 6, 3, (7, 9), (3, 2)
    window = (kh, kw, 2, 1, 1, 2, 1, 2)
    ho, wo = (h + 2 - 3) // 2 + 1, (w + 4 - 2 * (kw - 1) - 1) + 1
    big = T.float_from_data(np.random.default_rng(5).standard_normal((n, c + 1, h + 2, w)).astype(np.float32),
                            T.default_device())
    sx = big.strides   # x = big[:, 1:, 2:, :], a view
    x = primitive.TaichiTensor(big.buf, (n, c, h, w), sx, big.offset + sx[1] + 2 * sx[2], big.dtype, big.device)
    rows = (c // g) * kh * kw + (1 if ones else 0)
    length = ho * wo
    got = {}
    for columns in COLUMNS:
        cols = primitive.full((n * g * rows * length,), 7.0, np.dtype(np.float32), T.default_device())
        with SETTINGS.override(columns=columns):
            conv_columns.im2col(cols.buf, x.view(), (n, c, h, w, ho, wo), window, g * rows * length, length,
                                c // g if ones else 0)
        got[columns] = T.float_into_data(cols).reshape(n, g, rows, ho, wo)
    np.testing.assert_array_equal(got["host"], got["kernel"])
    want = Fn.unfold(torch.tensor(T.float_into_data(x)), (kh, kw), (1, 2), (1, 2), (2, 1)).numpy()
    want = want.reshape(n, g, (c // g) * kh * kw, ho, wo)
    np.testing.assert_array_equal(got["host"][:, :, : (c // g) * kh * kw], want)
    if ones:
        np.testing.assert_array_equal(got["host"][:, :, -1], 1.0)


def test_host_columns_in_two_halves_of_the_batch_equal_one_pass(T, monkeypatch):
    """Past `HALVES_FROM` elements the host im2col and col2im run the two
    halves of the batch on two threads: the same values, for an odd batch
    too, through the strided and the row (unit stride) col2im."""
    from burnbook.backend.taichi import primitive
    from burnbook.backend.taichi.ops import columns

    _columns_or_skip(T, "host")
    dev = T.default_device()
    n, c, h, w = 5, 3, 6, 7
    rng = np.random.default_rng(9)
    x = T.float_from_data(rng.standard_normal((n, c, h, w)).astype(np.float32), dev)
    b = T.float_from_data(rng.standard_normal(c).astype(np.float32), dev)
    got = {}
    for halves in (False, True):
        monkeypatch.setattr(columns, "HALVES_FROM", 0 if halves else 1 << 62)
        for window in ((3, 2, 1, 1, 1, 0, 1, 1), (3, 3, 2, 1, 1, 1, 2, 1)):
            kh, kw, sh, sw, ph, pw, dh, dw = window
            ho, wo = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
            length = ho * wo
            cols = primitive.full((n * c * kh * kw * length,), 7.0, np.dtype(np.float32), dev)
            columns.im2col(cols.buf, x.view(), (n, c, h, w, ho, wo), window, c * kh * kw * length, length)
            got[halves, window, "im2col"] = T.float_into_data(cols)
            # col2im of tap planes as wide as the input (a transposed conv of x's size)
            planes = T.float_from_data(rng.standard_normal((n, c, kh, kw, h, w)).astype(np.float32), dev) \
                if not halves else got[False, window, "planes"]
            got[halves, window, "planes"] = planes
            ho2, wo2 = (h - 1) * sh - 2 * ph + dh * (kh - 1) + 1, (w - 1) * sw - 2 * pw + dw * (kw - 1) + 1
            out = primitive.alloc((n, c, ho2, wo2), np.dtype(np.float32), dev)
            columns.col2im_host(out.buf, planes.buf, b.buf, (n, c, h, w, ho2, wo2), window)
            got[halves, window, "col2im"] = T.float_into_data(out)
            if (sh, sw) == (1, 1):
                wf = columns.grid((n, c, h, w, ho2, wo2), window)[1]
                wide = np.zeros((n, c, kh, kw, h, wf), np.float32)
                wide[..., :w] = T.float_into_data(planes)
                out = primitive.alloc((n, c, ho2, wo2), np.dtype(np.float32), dev)
                columns.col2im_host(out.buf, T.float_from_data(wide, dev).buf, b.buf, (n, c, h, w, ho2, wo2),
                                    window, rows=True)
                got[halves, window, "rows"] = T.float_into_data(out)
                np.testing.assert_array_equal(got[halves, window, "rows"], got[halves, window, "col2im"])
    for key in [k for k in got if k[0] and k[2] != "planes"]:
        np.testing.assert_array_equal(got[key], got[(False,) + key[1:]])


def test_col2im_variant_choice():
    from burnbook.backend.taichi import SETTINGS
    from burnbook.kernels import conv

    with pytest.raises(ValueError, match="lanes=16 for a width stride of 2"):
        conv.col2im(None, None, None, (1, 1, 4, 4, 9, 9), (3, 3, 2, 2, 0, 0, 1, 1), lanes=16)
    if not SETTINGS.gpu:
        assert [conv.col2im_lanes(wo, 1) for wo in (7, 8, 15, 16)] == [0, 8, 8, 16]
    assert conv.col2im_lanes(26, 2) == 0


def test_conv1d_and_its_transpose_match_torch(AD):
    x, w, wt = _data((2, 4, 9), (6, 2, 3), (4, 3, 2), seed=3)
    tol = DTYPES["f32"][1]
    check_torch(AD, np.float32, tol, lambda x, w: F.conv1d(x, w, None, ConvOptions(2, 1, 2, 2)),
                lambda x, w: Fn.conv1d(x, w, None, 2, 1, 2, 2), x, w)
    check_torch(AD, np.float32, tol,
                lambda x, w: F.conv_transpose1d(x, w, None, ConvTransposeOptions(2, 1, 1, 1, 1)),
                lambda x, w: Fn.conv_transpose1d(x, w, None, 2, 1, 1, 1, 1), x, wt)


# (shape, kernel, stride, padding, dilation, ceil_mode)
MAX_POOL = [
    ((2, 3, 7, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((2, 3, 7, 6), (2, 2), (2, 2), (0, 0), (1, 1), True),
    ((1, 2, 9, 8), (3, 2), (2, 3), (1, 1), (2, 1), True),
    ((1, 2, 5, 5), (3, 3), (1, 1), (1, 1), (1, 1), False),
    ((2, 1, 8, 7), (2, 3), (3, 2), (1, 1), (3, 2), False),
]


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("case", range(len(MAX_POOL)))
def test_max_pool2d_with_indices_matches_torch(T, AD, dt, case):
    dtype, tol = DTYPES[dt]
    _f64_or_skip(T, dtype)
    shape, k, s, p, d, ceil = MAX_POOL[case]
    (x,) = _data(shape, seed=20 + case)
    check_torch(AD, dtype, tol, lambda x: F.max_pool2d_with_indices(x, k, s, p, d, ceil),
                lambda x: Fn.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True), x, seed=case)
    check_torch(AD, dtype, tol, lambda x: F.max_pool2d(x, k, s, p, d, ceil),
                lambda x: Fn.max_pool2d(x, k, s, p, d, ceil_mode=ceil), x, seed=case)


def test_max_pool_takes_nan_and_ties_like_torch(AD):
    """A NaN wins its window; of equal maxima the first wins (PyTorch's rule)."""
    x = np.array([[[[1.0, 1.0, 0.0], [np.nan, 2.0, 2.0], [0.0, 3.0, 3.0]]]])
    out, idx = F.max_pool2d_with_indices(Tensor[AD, 4].from_data(x.astype(np.float32)), 2, 1)
    ref, ref_idx = Fn.max_pool2d(torch.tensor(x), 2, 1, return_indices=True)
    np.testing.assert_array_equal(idx.to_numpy(), ref_idx.numpy())
    np.testing.assert_array_equal(out.to_numpy(), ref.numpy())


# (shape, kernel, stride, padding, count_include_pad)
AVG_POOL = [
    ((2, 3, 7, 6), (2, 2), (2, 2), (0, 0), True),
    ((1, 2, 9, 8), (3, 2), (2, 3), (1, 1), True),
    ((1, 2, 9, 8), (3, 2), (2, 3), (1, 1), False),
    ((2, 1, 5, 6), (3, 3), (1, 1), (1, 0), False),
    ((1, 2, 6, 6), (1, 3), (3, 1), (0, 1), True),
]


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("case", range(len(AVG_POOL)))
def test_avg_pool2d_matches_torch(T, AD, dt, case):
    dtype, tol = DTYPES[dt]
    _f64_or_skip(T, dtype)
    shape, k, s, p, cip = AVG_POOL[case]
    (x,) = _data(shape, seed=30 + case)
    check_torch(AD, dtype, tol, lambda x: F.avg_pool2d(x, k, s, p, cip),
                lambda x: Fn.avg_pool2d(x, k, s, p, count_include_pad=cip), x, seed=case)


# (shape, output size): shrinking, uneven and overlapping bins, growing
ADAPTIVE = [((2, 3, 24, 24), (8, 8)), ((1, 2, 7, 5), (3, 2)), ((2, 1, 5, 4), (7, 3)), ((1, 1, 1, 6), (1, 4))]


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("case", range(len(ADAPTIVE)))
def test_adaptive_avg_pool2d_matches_torch(T, AD, dt, case):
    dtype, tol = DTYPES[dt]
    _f64_or_skip(T, dtype)
    shape, out = ADAPTIVE[case]
    (x,) = _data(shape, seed=40 + case)
    check_torch(AD, dtype, tol, lambda x: F.adaptive_avg_pool2d(x, out),
                lambda x: Fn.adaptive_avg_pool2d(x, out), x, seed=case)


# (shape, output size): even bins 8, 5 and 4 to a row (4 bins: the 8-lane
# variant walks each window), and uneven bins
ADAPTIVE_LANES = [((2, 3, 24, 24), (8, 8)), ((1, 2, 6, 20), (3, 5)), ((1, 2, 8, 36), (2, 4)), ((1, 2, 7, 17), (3, 9))]


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("case", range(len(ADAPTIVE_LANES)))
def test_adaptive_pool_variants_match_torch(T, dt, case):
    """Each adaptive kernel variant (one window at a time; 4 or 8 even bins at
    a time), forward and backward, on a permuted (strided) input and output
    gradient, against torch."""
    from burnbook.backend.taichi import primitive
    from burnbook.kernels import pool

    dtype, tol = DTYPES[dt]
    _f64_or_skip(T, dtype)
    shape, (ho, wo) = ADAPTIVE_LANES[case]
    n, c, h, w = shape
    a, ga = _data((n, h, c, w), (n, ho, c, wo), seed=70 + case)  # [n, h, c, w]: seen permuted
    xt = torch.tensor(a, requires_grad=True)
    want = Fn.adaptive_avg_pool2d(xt.permute(0, 2, 1, 3), (ho, wo))
    want.backward(torch.tensor(ga).permute(0, 2, 1, 3))
    dev = T.default_device()
    x, g = (T.float_permute(T.float_from_data(v.astype(dtype), dev), (0, 2, 1, 3)) for v in (a, ga))
    dims = (n, c, h, w, ho, wo)
    for lanes in pool.ADAPTIVE_LANES:
        out = primitive.alloc((n, c, ho, wo), np.dtype(dtype), dev)
        pool.adaptive(out.buf, x.view(), dims, lanes=lanes)
        np.testing.assert_allclose(T.float_into_data(out), want.detach().numpy(), err_msg=f"lanes={lanes}", **tol)
        gx = primitive.alloc((n, c, h, w), np.dtype(dtype), dev)
        pool.adaptive_backward(gx.buf, g.view(), dims, lanes=lanes)
        np.testing.assert_allclose(T.float_into_data(gx), xt.grad.permute(0, 2, 1, 3).numpy(),
                                   err_msg=f"grad, lanes={lanes}", **tol)
    with pytest.raises(ValueError, match="lanes=16"):
        pool.adaptive(None, x.view(), dims, lanes=16)


def test_strided_inputs_are_read_in_place(T):
    """Kernels read a permuted (non-contiguous) input through its strides."""
    (a,) = _data((2, 7, 3, 6), seed=5)  # [n, h, c, w], seen as [n, c, h, w]
    (w,) = _data((4, 3, 2, 2), seed=6)
    x = T.float_permute(T.float_from_data(a.astype(np.float32), T.default_device()), (0, 2, 1, 3))
    assert not x.contiguous
    xt = torch.tensor(a).permute(0, 2, 1, 3)
    weight = T.float_from_data(w.astype(np.float32), T.default_device())
    got = {
        "conv": T.conv2d(x, weight, None, ConvOptions(1, 1).resolved(2)),
        "max": T.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1)),
        "avg": T.avg_pool2d(x, (3, 2), (1, 2), (1, 0), False),
        "adaptive": T.adaptive_avg_pool2d(x, (3, 4)),
    }
    want = {
        "conv": Fn.conv2d(xt, torch.tensor(w), None, 1, 1),
        "max": Fn.max_pool2d(xt, 2),
        "avg": Fn.avg_pool2d(xt, (3, 2), (1, 2), (1, 0), count_include_pad=False),
        "adaptive": Fn.adaptive_avg_pool2d(xt, (3, 4)),
    }
    for name in got:
        np.testing.assert_allclose(T.float_into_data(got[name]), want[name].numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=name)


def test_f16_runs_in_f16(T, AD):
    """f16 tensors stay f16 through conv and pools and their gradients."""
    x, w = _data((2, 2, 6, 6), (3, 2, 3, 3), seed=8)
    xs = Tensor[AD, 4].from_data(x.astype(np.float32)).cast(np.float16).require_grad()
    ws = Tensor[AD, 4].from_data(w.astype(np.float32)).cast(np.float16).require_grad()
    y = F.max_pool2d(F.conv2d(xs, ws, None, ConvOptions(1, 1)), 2)
    y = F.adaptive_avg_pool2d(F.avg_pool2d(y, 2, 1, 1), (2, 2))
    grads = y.sum().backward()
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ref = Fn.adaptive_avg_pool2d(Fn.avg_pool2d(Fn.max_pool2d(Fn.conv2d(xt, wt, None, 1, 1), 2), 2, 1, 1), (2, 2))
    ref.sum().backward()
    assert y.to_numpy().dtype == np.float16 and xs.grad(grads).to_numpy().dtype == np.float16
    np.testing.assert_allclose(y.to_numpy(), ref.detach().numpy(), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(xs.grad(grads).to_numpy(), xt.grad.numpy(), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(ws.grad(grads).to_numpy(), wt.grad.numpy(), rtol=3e-2, atol=3e-2)


# -- autotune ------------------------------------------------------------------------------------

def _conv_args(T, seed=0):
    x, w, b = _data((2, 3, 9, 9), (4, 3, 3, 3), (4,), seed=seed)
    dev = T.default_device()
    up = lambda a: T.float_from_data(a.astype(np.float32), dev)  # noqa: E731
    return up(x), up(w), up(b), ConvOptions(1, 1).resolved(2)


def _counting(monkeypatch):
    from burnbook.backend.taichi.ops import module_ops

    calls = {name: 0 for name in module_ops.CONV2D_VARIANTS}
    for name, fn in list(module_ops.CONV2D_VARIANTS.items()):
        def counted(*args, _fn=fn, _name=name):
            calls[_name] += 1
            return _fn(*args)
        monkeypatch.setitem(module_ops.CONV2D_VARIANTS, name, counted)
    return calls


def test_autotune_times_each_variant_once_and_saves_the_table(T, tmp_path, monkeypatch):
    from burnbook.backend.taichi import autotune

    calls = _counting(monkeypatch)
    x, w, b, opts = _conv_args(T)
    first = T.float_into_data(T.conv2d(x, w, b, opts))
    tuned = dict(calls)
    assert all(n >= 2 for n in tuned.values())  # a compiling run and timed runs each
    T.conv2d(x, w, b, opts)
    assert sum(calls.values()) == sum(tuned.values()) + 1  # the choice is reused, nothing re-timed
    table = autotune.table()
    (key, entry), = table.items()
    assert key.startswith("conv2d|") and entry["choice"] in calls and set(entry["us"]) == set(calls)
    assert calls[entry["choice"]] == tuned[entry["choice"]] + 1
    on_disk = json.loads((tmp_path / "autotune.json").read_text())
    assert on_disk["entries"] == table
    # A new process (a cleared table) reads the choice back without timing.
    autotune.clear()
    before = dict(calls)
    again = T.float_into_data(T.conv2d(x, w, b, opts))
    assert sum(calls.values()) == sum(before.values()) + 1
    np.testing.assert_allclose(again, first, rtol=1e-5, atol=1e-5)


def test_autotune_follows_the_table_on_disk(T, tmp_path, monkeypatch):
    from burnbook.backend.taichi import autotune

    calls = _counting(monkeypatch)
    x, w, b, opts = _conv_args(T)
    T.conv2d(x, w, b, opts)
    (key, entry), = autotune.table().items()
    other = next(name for name in calls if name != entry["choice"])
    (tmp_path / "autotune.json").write_text(json.dumps(
        {"version": 1, "entries": {key: {"choice": other, "us": entry["us"]}}}))
    autotune.clear()
    before = dict(calls)
    T.conv2d(x, w, b, opts)
    assert calls[other] == before[other] + 1 and sum(calls.values()) == sum(before.values()) + 1


def test_autotune_retunes_over_an_unreadable_file(T, tmp_path):
    from burnbook.backend.taichi import autotune

    path = tmp_path / "autotune.json"
    path.write_text("{not json")
    x, w, b, opts = _conv_args(T)
    with pytest.warns(RuntimeWarning, match="autotune.json"):
        T.conv2d(x, w, b, opts)
    assert json.loads(path.read_text())["entries"] == autotune.table() != {}


def test_forced_variant_skips_tuning(T, tmp_path):
    from burnbook.backend.taichi import SETTINGS, autotune

    x, w, b, opts = _conv_args(T)
    with SETTINGS.override(conv="direct"):
        direct = T.float_into_data(T.conv2d(x, w, b, opts))
    with SETTINGS.override(conv="im2col"):
        im2col = T.float_into_data(T.conv2d(x, w, b, opts))
    assert autotune.table() == {} and not (tmp_path / "autotune.json").exists()
    np.testing.assert_allclose(direct, im2col, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="conv"):
        with SETTINGS.override(conv="winograd"):
            pass


def test_unwritable_cache_still_tunes(T, tmp_path, monkeypatch):
    from burnbook.backend.taichi import autotune

    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("BURNBOOK_AUTOTUNE_CACHE", str(blocker / "autotune.json"))  # a folder that is a file
    autotune.clear()
    x, w, b, opts = _conv_args(T)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        T.conv2d(x, w, b, opts)
    assert any("cannot be written" in str(c.message) for c in caught)
    assert len(autotune.table()) == 1
