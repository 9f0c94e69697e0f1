"""Grouped and depthwise convolution on NdArray against PyTorch.

NdArray has a fast path for groups with one input channel (depthwise conv,
and conv_transpose with one output channel per group), a batched GEMM over
groups otherwise, and one GEMM over the whole batch for small planes; both must match `torch.nn.functional` in the forward
pass and in the input, weight and bias gradients, for strides, dilations,
paddings and channel multipliers, in 1-D and 2-D.
"""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.autodiff import Autodiff
from burnbook.backend import NdArray
from burnbook.tensor import module as F
from burnbook.tensor.ops import ConvOptions, ConvTransposeOptions

torch = pytest.importorskip("torch")
Fn = torch.nn.functional
B = Autodiff[NdArray]

# (in channels, out channels, groups, kernel, stride, padding, dilation, size)
CONV2D = [
    (6, 6, 1, 3, 1, 1, 1, 9),      # plain, a small plane: one GEMM over the batch
    (3, 4, 1, 3, 1, 1, 1, 17),     # plain, a plane above NdArray's small-plane size, stride 1
    (3, 4, 1, 3, 2, 1, 1, 33),     # the same, stride 2
    (6, 6, 6, 3, 1, 1, 1, 9),      # depthwise
    (6, 12, 6, 3, 2, 1, 1, 10),    # depthwise, channel multiplier 2, stride 2
    (4, 8, 4, (3, 2), (2, 3), (1, 0), (2, 1), 11),  # depthwise, uneven everything
    (6, 6, 6, 5, 3, 2, 1, 13),     # stride 3: three phases per dim
    (6, 6, 6, 3, 1, 0, 2, 9),      # depthwise, dilation 2, no padding
    (3, 3, 3, 3, 1, 1, 1, 36),     # depthwise on a plane past NdArray's channels-last size: planar
    (4, 4, 4, (3, 5), (1, 2), (1, 2), 1, 70),   # the same, stride 2 across, uneven kernel
    (8, 4, 2, 3, 1, 1, 1, 8),      # two groups
    (6, 9, 3, 3, 2, 1, 1, 9),      # three groups, stride 2
    (8, 8, 4, (1, 3), 1, (0, 1), 1, 7),  # four groups
]


def check(ours, theirs, x, w, b, seed):
    """Forward and the gradients of sum(out * R) w.r.t. x, weight and bias,
    ours (f32) against torch (f64)."""
    xs = [Tensor[B, a.ndim].from_data(a.astype(np.float32)).require_grad() for a in (x, w, b)]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b)]
    out, ref = ours(*xs), theirs(*ts)
    assert out.dims() == list(ref.shape)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    r = np.random.default_rng(seed).standard_normal(out.dims())
    grads = (out * Tensor[B, out.ndim].from_data(r)).sum().backward()
    (ref * torch.tensor(r)).sum().backward()
    for name, a, t in zip(("input", "weight", "bias"), xs, ts):
        np.testing.assert_allclose(a.grad(grads).to_numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=f"grad of the {name}")


@pytest.mark.parametrize("cin, cout, groups, k, s, p, d, size", CONV2D)
def test_conv2d_matches_torch(cin, cout, groups, k, s, p, d, size):
    rng = np.random.default_rng(cin * 100 + cout + groups)
    kh, kw = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal((2, cin, size, size + 1))
    w = rng.standard_normal((cout, cin // groups, kh, kw))
    b = rng.standard_normal(cout)
    opts = ConvOptions(s, p, d, groups)
    check(lambda x, w, b: F.conv2d(x, w, b, opts), lambda x, w, b: Fn.conv2d(x, w, b, s, p, d, groups),
          x, w, b, seed=cin + cout)


@pytest.mark.parametrize("cin, cout, groups, k, s, p, d", [
    (5, 5, 5, 3, 1, 1, 1), (4, 8, 4, 5, 2, 2, 1), (6, 6, 3, 3, 1, 2, 2)])
def test_conv1d_matches_torch(cin, cout, groups, k, s, p, d):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, cin, 17))
    w = rng.standard_normal((cout, cin // groups, k))
    b = rng.standard_normal(cout)
    opts = ConvOptions(s, p, d, groups)
    check(lambda x, w, b: F.conv1d(x, w, b, opts), lambda x, w, b: Fn.conv1d(x, w, b, s, p, d, groups),
          x, w, b, seed=cin)


# (in channels, out channels, groups, kernel, stride, padding, output padding, dilation)
TRANSPOSE = [
    (6, 6, 6, 3, 1, 1, 0, 1),      # one output channel per group, one input
    (6, 3, 3, 3, 2, 1, 1, 1),      # one output channel per group, two inputs, stride 2
    (4, 4, 4, (2, 3), (3, 2), (0, 1), (1, 0), (1, 2)),
    (4, 8, 2, 3, 2, 0, 0, 1),      # grouped, several outputs per group
]


@pytest.mark.parametrize("cin, cout, groups, k, s, p, po, d", TRANSPOSE)
def test_conv_transpose2d_matches_torch(cin, cout, groups, k, s, p, po, d):
    rng = np.random.default_rng(cin + 10 * cout + groups)
    kh, kw = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal((2, cin, 6, 5))
    w = rng.standard_normal((cin, cout // groups, kh, kw))
    b = rng.standard_normal(cout)
    opts = ConvTransposeOptions(s, p, po, d, groups)
    check(lambda x, w, b: F.conv_transpose2d(x, w, b, opts),
          lambda x, w, b: Fn.conv_transpose2d(x, w, b, s, p, po, groups, d), x, w, b, seed=cout)


def test_depthwise_float64_stays_float64():
    # The fast path must not drop a float64 input to float32.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 7, 7))
    w = rng.standard_normal((4, 1, 3, 3))
    out = NdArray.conv2d(x, w, None, ConvOptions((1, 1), (1, 1), (1, 1), 4))
    ref = Fn.conv2d(torch.tensor(x), torch.tensor(w), None, 1, 1, 1, 4).numpy()
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in CONV2D if c[0] == c[1] == c[2]] + [
    (16, 16, 16, 5, 2, 2, 1, 28), (5, 5, 5, (3, 2), (2, 1), (0, 1), (1, 2), 15)])
@pytest.mark.parametrize("batch", [1, 3])
def test_depthwise_forward_channels_last_and_planar_give_the_same_bits(case, batch):
    """NdArray's two depthwise forward paths (channels-last for small output
    planes, planar above `_CHANNELS_LAST_PLANE`) add the taps in the same
    order, so whichever runs gives the same values."""
    from burnbook.backend.ndarray import module_ops as nm

    c, _, _, k, s, p, d, size = case
    kh, kw = (k, k) if isinstance(k, int) else k
    s, p, d = ((v, v) if isinstance(v, int) else tuple(v) for v in (s, p, d))
    opts = ConvOptions(s, p, d, c)
    rng = np.random.default_rng(size * 10 + batch)
    x = rng.standard_normal((batch, c, size, size)).astype(np.float32)
    w = rng.standard_normal((c, 1, kh, kw)).astype(np.float32)
    out = [nm.conv_output_size(size, kk, st, pp, dd) for kk, st, pp, dd in
           zip((kh, kw), opts.stride, opts.padding, opts.dilation)]
    pads = nm._pads(x, (kh, kw), opts, out)
    last = nm._depthwise_conv_channels_last(x, w, pads, opts.stride, opts.dilation, out)
    planar = nm._depthwise_conv(x, w, pads, opts.stride, opts.dilation, out)[..., :out[1]]
    np.testing.assert_array_equal(last, planar)
    ref = Fn.conv2d(torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64), None,
                   opts.stride, opts.padding, opts.dilation, c).numpy()
    np.testing.assert_allclose(last, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size, stride", [(9, 1), (33, 2), (33, 1)])
def test_conv2d_of_a_non_contiguous_input_without_padding(size, stride):
    """NdArray's im2col reads windows through a strided view of the (padded)
    input; an input that is itself a strided view and needs no padding is
    read in place (`as_strided`), and gives the values of its contiguous copy."""
    rng = np.random.default_rng(size + stride)
    x = rng.standard_normal((2, size, size, 3)).astype(np.float32).transpose(0, 3, 1, 2)   # [N, C, H, W] view
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    opts = ConvOptions((stride, stride), (0, 0), (1, 1), 1)
    assert not x.flags.c_contiguous
    got = NdArray.conv2d(x, w, None, opts)
    np.testing.assert_array_equal(got, NdArray.conv2d(np.ascontiguousarray(x), w, None, opts))
    ref = Fn.conv2d(torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64), None, stride).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
