"""Naive NumPy references for the module ops: loops over output positions,
written for clarity, not speed (the cases' tensors are tiny). Layouts are
Burn's and PyTorch's: `x [N, C, H, W]`, conv weights `[O, C/groups, kh,
kw]`, transposed-conv weights `[C, O/groups, kh, kw]`; 1-D ops are the 2-D
ones with H = 1."""

from __future__ import annotations

import numpy as np


def conv2d(x, w, b, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(ho):
            for j in range(wo):
                patch = xp[:, g * cg:(g + 1) * cg, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                           j * sw:j * sw + dw * (kw - 1) + 1:dw]
                out[:, oc, i, j] = np.sum(patch * w[oc], axis=(1, 2, 3))
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def conv_transpose2d(x, w, b, stride, padding, padding_out, dilation, groups):
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (ph, pw), (qh, qw), (dh, dw) = stride, padding, padding_out, dilation
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + qh
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + qw
    full = np.zeros((n, og * groups, full_h + ph, full_w + pw))
    cg = c // groups
    for ic in range(c):
        g = ic // cg
        for i in range(h):
            for j in range(wd):
                for ki in range(kh):
                    for kj in range(kw):
                        full[:, g * og:(g + 1) * og, i * sh + ki * dh, j * sw + kj * dw] += (
                            x[:, ic, i, j][:, None] * w[ic, :, ki, kj][None, :])
    out = full[:, :, ph:ph + (h - 1) * sh - 2 * ph + dh * (kh - 1) + qh + 1,
               pw:pw + (wd - 1) * sw - 2 * pw + dw * (kw - 1) + qw + 1]
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def _pool_size(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= size + p else out


def max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode):
    n, c, h, w = x.shape
    ho = _pool_size(h, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    wo = _pool_size(w, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    out = np.full((n, c, ho, wo), -np.inf)
    idx = np.zeros((n, c, ho, wo), np.int64)
    for i in range(ho):
        for j in range(wo):
            for ki in range(kernel[0]):
                for kj in range(kernel[1]):
                    r = i * stride[0] - padding[0] + ki * dilation[0]
                    q = j * stride[1] - padding[1] + kj * dilation[1]
                    if 0 <= r < h and 0 <= q < w:
                        v = x[:, :, r, q]
                        better = v > out[:, :, i, j]
                        out[:, :, i, j] = np.where(better, v, out[:, :, i, j])
                        idx[:, :, i, j] = np.where(better, r * w + q, idx[:, :, i, j])
    return out, idx


def avg_pool2d(x, kernel, stride, padding, count_include_pad):
    n, c, h, w = x.shape
    ho = (h + 2 * padding[0] - kernel[0]) // stride[0] + 1
    wo = (w + 2 * padding[1] - kernel[1]) // stride[1] + 1
    out = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            r0, q0 = i * stride[0] - padding[0], j * stride[1] - padding[1]
            r1, q1 = r0 + kernel[0], q0 + kernel[1]
            window = x[:, :, max(r0, 0):min(r1, h), max(q0, 0):min(q1, w)]
            count = kernel[0] * kernel[1] if count_include_pad else window.shape[2] * window.shape[3]
            out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return out


def adaptive_avg_pool2d(x, output_size):
    n, c, h, w = x.shape
    out = np.zeros((n, c) + tuple(output_size))
    for i in range(output_size[0]):
        r0, r1 = (i * h) // output_size[0], -(-((i + 1) * h) // output_size[0])
        for j in range(output_size[1]):
            q0, q1 = (j * w) // output_size[1], -(-((j + 1) * w) // output_size[1])
            out[:, :, i, j] = x[:, :, r0:r1, q0:q1].mean(axis=(2, 3))
    return out


def as_2d(fn):
    """The 1-D form of a 2-D reference: `[N, C, L]` runs as `[N, C, 1, L]`."""
    def one_d(x, *args):
        args = [a[:, :, None, :] if isinstance(a, np.ndarray) and a.ndim == 3 else a for a in args]
        out = fn(x[:, :, None, :], *args)
        if isinstance(out, tuple):
            return tuple(o[:, :, 0, :] for o in out)
        return out[:, :, 0, :]
    return one_d
