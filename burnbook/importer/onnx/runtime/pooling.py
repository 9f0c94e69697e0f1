"""Runtime helpers for the windowed operators (`ops/conv_pool`): ONNX's
asymmetric spatial padding (`pad`, which Conv uses too) and the pools
burnbook's own `max_pool2d`/`avg_pool2d` do not cover (asymmetric pads,
dilations, ceil mode, any number of spatial dims, `Indices`, LpPool).

Each window is walked offset by offset as strided slices of the padded
input, combined with Tensor operations only, so autodiff follows.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from burnbook.tensor import Int, Tensor
from burnbook.tensor import module as F


_LOWEST = -3.4028234663852886e38


def pad(x: Any, pads: Sequence[int], value: float = 0.0) -> Any:
    """Pad the spatial dims of `[batch, channels, ...]` with ONNX's `pads`
    (all begins, then all ends); the values are copied into a filled tensor
    with `slice_assign`, which autodiff differentiates."""
    n = len(pads) // 2
    dims = x.dims()
    begins, ends = list(pads[:n]), list(pads[n:])
    if not any(begins) and not any(ends):
        return x
    out = dims[:2] + [d + b + e for d, b, e in zip(dims[2:], begins, ends)]
    ranges = [(0, dims[0]), (0, dims[1])] + [(b, b + d) for d, b in zip(dims[2:], begins)]
    return type(x).full(out, value, x.device()).slice_assign(ranges, x)


def _pool_pads(dims: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
               ceil_mode: bool, dilations: Sequence[int]) -> tuple[list[int], list[int]]:
    """(output sizes, extra end padding) of an ONNX pool: in ceil mode a last
    window may hang over the end, provided it starts inside the input or its
    begin padding."""
    n = len(kernel)
    outs, extra = [], []
    for i in range(n):
        span = dilations[i] * (kernel[i] - 1) + 1
        total = dims[i] + pads[i] + pads[n + i]
        if ceil_mode:
            out = -(-(total - span) // strides[i]) + 1
            if (out - 1) * strides[i] >= dims[i] + pads[i]:
                out -= 1
        else:
            out = (total - span) // strides[i] + 1
        outs.append(out)
        extra.append(max(0, (out - 1) * strides[i] + span - total))
    return outs, extra


def pool(x: Any, mode: str, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
         dilations: Sequence[int] | None = None, ceil_mode: bool = False, count_include_pad: bool = False) -> Any:
    """ONNX `MaxPool` (`mode="max"`) or `AveragePool` (`"avg"`) over any
    number of spatial dims, with asymmetric pads, dilations and ceil mode.

    The window is walked offset by offset: each offset is one strided slice
    of the padded input, and the slices are combined with a running max or
    sum, so only Tensor ops are used and autodiff follows. An average divides
    by the matching sum over a mask of the positions that count (the input,
    plus the explicit pads when `count_include_pad`)."""
    n = len(kernel)
    dilations = list(dilations or [1] * n)
    spatial = x.dims()[2:]
    outs, extra = _pool_pads(spatial, kernel, strides, pads, ceil_mode, dilations)
    full = list(pads[:n]) + [e + x for e, x in zip(pads[n:], extra)]
    fill = _LOWEST if mode == "max" else 0.0
    xp = pad(x, full, fill)
    mask = None
    if mode == "avg":
        mask = type(x).ones([1, 1] + list(spatial), x.device())
        mask = pad(mask, list(pads), 1.0 if count_include_pad else 0.0)
        mask = pad(mask, [0] * n + list(extra), 0.0)
    acc = count = None
    for offset in itertools.product(*(range(k) for k in kernel)):
        ranges = [slice(None), slice(None)] + [
            slice(o * d, o * d + (m - 1) * s + 1, s) for o, d, m, s in zip(offset, dilations, outs, strides)]
        window = xp.slice(ranges)
        if mode == "max":
            acc = window if acc is None else acc.mask_where(window.greater(acc), window)
        else:
            acc = window if acc is None else acc + window
            w = mask.slice(ranges)
            count = w if count is None else count + w
    return acc if mode == "max" else acc / count


def max_pool_with_indices(x: Any, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                          dilations: Sequence[int], ceil_mode: bool = False, storage_order: int = 0) -> tuple:
    """2-D ONNX `MaxPool` with its `Indices` output: positions flattened over
    the whole `[N, C, H, W]` input (PyTorch's are per plane), row-major, or
    column-major within a plane when `storage_order` is 1."""
    out, idx = F.max_pool2d_with_indices(x, list(kernel), list(strides), list(pads[:2]), list(dilations), ceil_mode)
    n, c, h, w = x.dims()
    if storage_order:
        row = idx / w  # Int division truncates; positions are never negative
        idx = (idx - row * w) * h + row
    base = Tensor[x.backend, 1, Int].arange(0, n * c, x.device()).reshape([n, c, 1, 1]) * (h * w)
    return out, idx + base


def lp_pool(x: Any, p: float, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
            dilations: Sequence[int] | None = None, ceil_mode: bool = False) -> Any:
    """ONNX `LpPool`: `(sum over the window of |x|^p)^(1/p)`, zero padding,
    with the same windows as `runtime.pool` (dilations, ceil mode)."""
    n = len(kernel)
    dilations = list(dilations or [1] * n)
    outs, extra = _pool_pads(x.dims()[2:], kernel, strides, pads, ceil_mode, dilations)
    powered = x.abs().powf_scalar(float(p)) if p != 2 else x * x
    xp = pad(powered, list(pads[:n]) + [e + q for e, q in zip(pads[n:], extra)], 0.0)
    acc = None
    for offset in itertools.product(*(range(k) for k in kernel)):
        ranges = [slice(None), slice(None)] + [
            slice(o * d, o * d + (m - 1) * s + 1, s) for o, d, m, s in zip(offset, dilations, outs, strides)]
        window = xp.slice(ranges)
        acc = window if acc is None else acc + window
    return acc.sqrt() if p == 2 else acc.powf_scalar(1.0 / float(p))
