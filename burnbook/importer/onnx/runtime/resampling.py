"""Runtime helpers for ONNX `Resize` and `GridSample` (`ops/resize`).

Resize's source positions and weights depend only on shapes and are worked
out on the host with NumPy; the values are combined with Tensor operations.
GridSample's positions come from a tensor (the grid), so they stay tensors.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Bool, Float, Int, Tensor

def _like(x: Any, values: Any, kind: type = Float) -> Any:
    """A constant tensor of `values` on `x`'s backend and device."""
    array = np.asarray(values)
    array = array.reshape(1) if array.ndim == 0 else array
    return Tensor[x.backend, array.ndim, kind].from_data(array, x.device())


def _host(value: Any) -> np.ndarray | None:
    """A list or tensor input (scales, sizes, roi) as a NumPy array."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    return np.asarray(value.to_numpy()).reshape(-1)


# -- Resize ----------------------------------------------------------------------------
def _source_positions(mode: str, out: np.ndarray, scale: float, size_in: int, size_out: int,
                      roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Where each output index samples the input (ONNX's
    coordinate_transformation_mode), and for tf_crop_and_resize which
    outputs fall outside the input."""
    width = scale * size_in  # the output length before rounding
    outside = None
    if mode == "align_corners":
        pos = np.zeros(size_out) if width == 1 else out * (size_in - 1) / (width - 1)
    elif mode == "asymmetric":
        pos = out / scale
    elif mode == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        if width == 1:
            pos = np.full(size_out, (hi - lo) * (size_in - 1) / 2)
        else:
            pos = out * (hi - lo) * (size_in - 1) / (width - 1)
        pos = pos + lo * (size_in - 1)
        outside = (pos < 0) | (pos > size_in - 1)
    elif mode == "pytorch_half_pixel":
        pos = np.full(size_out, -0.5) if width == 1 else (out + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        pos = (out + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        shift = size_in / 2 * (1 - size_out / width)
        pos = shift + (out + 0.5) / scale - 0.5
    else:
        raise ValueError(f"Resize: unknown coordinate_transformation_mode {mode!r}")
    return pos, outside


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel at distances `t`."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _taps(mode: str, frac: np.ndarray, scale: float, nearest_mode: str, cubic_a: float,
          antialias: bool) -> np.ndarray:
    """The weights `[out, taps]` of the input positions around each source
    position, `frac` in (0, 1] being its distance past the left neighbour."""
    if mode == "nearest":
        integral = frac == 1.0
        if nearest_mode == "round_prefer_floor":
            right = frac > 0.5
        elif nearest_mode == "round_prefer_ceil":
            right = frac >= 0.5
        elif nearest_mode == "floor":
            right = np.zeros_like(frac, dtype=bool)
        elif nearest_mode == "ceil":
            right = np.ones_like(frac, dtype=bool)
        else:
            raise ValueError(f"Resize: unknown nearest_mode {nearest_mode!r}")
        right = right | integral
        return np.stack([~right, right], axis=1).astype(np.float64)
    s = min(scale, 1.0) if antialias else 1.0
    if mode == "linear":
        first = int(np.floor(-1 / s) + 1)
        offsets = np.arange(first, 2 - first)
        w = np.clip(1 - np.abs((offsets[None, :] - frac[:, None]) * s), 0, 1)
    else:  # cubic
        first = int(np.floor(-2 / s) + 1)
        offsets = np.arange(first, 2 - first)
        w = _cubic((offsets[None, :] - frac[:, None]) * s, cubic_a)
    return w / w.sum(axis=1, keepdims=True) if antialias else w


def _axis_plan(size_in: int, size_out: int, scale: float, roi: tuple[float, float] | None, mode: str,
               coord: str, nearest_mode: str, cubic_a: float, exclude_outside: bool,
               antialias: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """For one axis: input indices `[out, taps]` (clamped, which is edge
    padding), their weights, and the outputs set to the extrapolation value."""
    pos, outside = _source_positions(coord, np.arange(size_out, dtype=np.float64), scale, size_in, size_out, roi)
    left = np.floor(pos)
    frac = np.where(pos == left, 1.0, pos - left)  # the left neighbour is preferred: frac in (0, 1]
    weights = _taps(mode, frac, scale, nearest_mode, cubic_a, antialias)
    taps = weights.shape[1]
    # the `taps` indices nearest the position, ties to the smaller ones
    half = -(-taps // 2)
    shifted = pos + half
    base = np.floor(shifted)
    rest = shifted - base
    if taps % 2 == 0:
        start = base + np.where(rest == 0, -(taps // 2), -(taps // 2) + 1)
    else:
        start = base + np.where(rest <= 0.5, -((taps - 1) // 2), -((taps - 1) // 2) + 1)
    index = (start[:, None] + np.arange(taps)[None, :] - half).astype(np.int64)
    if exclude_outside:
        weights = np.where((index < 0) | (index >= size_in), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(index, 0, size_in - 1), weights, outside


def resize(x: Any, roi: Any = None, scales: Any = None, sizes: Any = None, mode: str = "nearest",
           coordinate_transformation_mode: str = "half_pixel", nearest_mode: str = "round_prefer_floor",
           cubic_coeff_a: float = -0.75, exclude_outside: bool = False, extrapolation_value: float = 0.0,
           antialias: bool = False, axes: Sequence[int] | None = None,
           keep_aspect_ratio_policy: str = "stretch") -> Any:
    """ONNX `Resize` (opsets 10-19): each resized axis in turn becomes a
    weighted sum of input slices picked with `select`, the picks and weights
    worked out on the host from the dims, scales and sizes (nearest takes a
    single slice, so it is exact for Int tensors too)."""
    dims = x.dims()
    rank = len(dims)
    scales_a, sizes_a, roi_a = _host(scales), _host(sizes), _host(roi)
    if scales_a is not None and scales_a.size == 0:
        scales_a = None
    if sizes_a is not None and sizes_a.size == 0:
        sizes_a = None
    if roi_a is not None and roi_a.size == 0:
        roi_a = None
    axes = list(range(rank)) if axes is None else [a + rank if a < 0 else a for a in axes]
    if (scales_a is None) == (sizes_a is None):
        raise ValueError("Resize: give exactly one of scales and sizes")
    given = scales_a if scales_a is not None else sizes_a
    if len(given) != len(axes):
        raise ValueError(f"Resize: {len(given)} scales/sizes for {len(axes)} axes (input {dims})")
    scale = [1.0] * rank
    out = list(dims)
    if sizes_a is not None:
        for a, s in zip(axes, sizes_a):
            out[a], scale[a] = int(s), int(s) / dims[a]
        if keep_aspect_ratio_policy in ("not_larger", "not_smaller"):
            pick = min if keep_aspect_ratio_policy == "not_larger" else max
            common = pick(scale[a] for a in axes)
            for a in axes:
                scale[a], out[a] = common, int(common * dims[a] + 0.5)
    else:
        for a, s in zip(axes, scales_a):
            scale[a], out[a] = float(s), int(float(s) * dims[a])
    rois: dict[int, tuple[float, float]] = {}
    if roi_a is not None:
        k = len(roi_a) // 2
        for i, a in enumerate(axes if k == len(axes) else range(rank)):
            rois[a] = (float(roi_a[i]), float(roi_a[k + i]))
    for a in axes:
        r = rois.get(a)
        if out[a] == dims[a] and math.isclose(scale[a], 1.0) and (
                r is None or (math.isclose(r[0], 0.0) and math.isclose(r[1], 1.0))):
            continue
        x = _resize_axis(x, a, *_axis_plan(dims[a], out[a], scale[a], r, mode, coordinate_transformation_mode,
                                           nearest_mode, cubic_coeff_a, exclude_outside, antialias),
                         extrapolation_value)
    return x


def _resize_axis(x: Any, axis: int, index: np.ndarray, weights: np.ndarray, outside: np.ndarray | None,
                 extrapolation: float) -> Any:
    """`sum_t select(axis, index[:, t]) * weights[:, t]` for one axis."""
    rank = x.ndim
    shape = [1] * rank
    shape[axis] = index.shape[0]
    result = None
    for t in range(index.shape[1]):
        w = weights[:, t]
        if not w.any():
            continue
        picked = x.select(axis, _like(x, index[:, t], Int))
        if x.kind is not Float:  # nearest on Int/Bool: the one tap of weight 1
            term = picked if result is None else result.mask_where(_like(x, w.reshape(shape) != 0, Bool)
                                                                   .expand(picked.dims()), picked)
            result = term
            continue
        term = picked if np.all(w == 1.0) else picked * _like(x, w.reshape(shape))
        result = term if result is None else result + term
    if result is None:  # every weight zero (exclude_outside far outside)
        dims = x.dims()
        dims[axis] = index.shape[0]
        result = type(x).zeros(dims, x.device())
    if outside is not None and outside.any():
        mask = _like(x, outside.reshape(shape), Bool).expand(result.dims())
        result = result.mask_where(mask, type(result).full(result.dims(), extrapolation, x.device()))
    return result


# -- GridSample ------------------------------------------------------------------------
def _floor(t: Any) -> Any:
    """Element-wise floor of a Float tensor (truncation, one down below zero)."""
    trunc = t.int().float()
    return trunc.mask_where(trunc.greater(t), trunc - 1.0)


def _rint(t: Any) -> Any:
    """Element-wise round half to even (NumPy's rint, PyTorch's nearest)."""
    up = _floor(t + 0.5)
    half = (t + 0.5).equal(up)
    odd = (up - _floor(up * 0.5) * 2.0).equal_elem(1.0)
    return up.mask_where(half.bool_and(odd), up - 1.0)


def _reflect(t: Any, lo: float, hi: float) -> Any:
    """Coordinates folded back into [lo, hi] by reflecting off its ends."""
    span = hi - lo
    if span <= 0:
        return t.zeros_like() + lo
    below, above = t.lower_elem(lo), t.greater_elem(hi)
    dist = (t - lo).mask_where(below, lo - t).mask_where(above, t - hi)
    dist = dist.mask_where(below.bool_or(above).bool_not(), dist.zeros_like())
    flips = _floor(dist / span)
    rest = dist - flips * span
    even = (flips - _floor(flips * 0.5) * 2.0).equal_elem(0.0)
    from_low = (rest + lo).mask_where(even.bool_not(), hi - rest)
    from_high = (hi - rest).mask_where(even.bool_not(), rest + lo)
    return t.mask_where(below, from_low).mask_where(above, from_high)


def _cubic_t(t: Any, a: float = -0.75) -> Any:
    t = t.abs()
    near = ((t * (a + 2) - (a + 3)) * t) * t + 1.0
    far = ((t * a - 5 * a) * t + 8 * a) * t - 4 * a
    return near.mask_where(t.greater_elem(1.0), far).mask_where(t.greater_equal_elem(2.0), t.zeros_like())


def grid_sample(x: Any, grid: Any, mode: str = "linear", padding_mode: str = "zeros",
                align_corners: bool = False) -> Any:
    """ONNX `GridSample` over any number of spatial dims: `x [N, C, D1..Dn]`
    sampled at `grid [N, O1..Om, n]`, normalised coordinates in [-1, 1] in
    reverse dim order (x, the last dim, first, as in PyTorch). Modes
    linear/nearest/cubic (opset 16's bilinear/bicubic too), padding
    zeros/border/reflection. The sampling positions stay tensors, so
    gradients reach both `x` and `grid` (except through nearest's rounding)."""
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    dims = x.dims()
    n_batch, channels, spatial = dims[0], dims[1], dims[2:]
    k = len(spatial)
    gdims = grid.dims()
    if gdims[0] != n_batch or gdims[-1] != k or len(gdims) != k + 2:
        raise ValueError(f"GridSample: grid {gdims} does not fit input {dims} (expected [{n_batch}, ..., {k}])")
    out = gdims[1:-1]
    q = math.prod(out)
    flat_grid = grid.reshape([n_batch, q, k])
    coords, lows, highs = [], [], []
    for j, size in enumerate(spatial):
        g = flat_grid.slice([slice(None), slice(None), slice(k - 1 - j, k - j)]).reshape([n_batch, 1, q])
        pos = (g + 1.0) * (0.5 * (size - 1)) if align_corners else ((g + 1.0) * size - 1.0) * 0.5
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if mode == "nearest":
            pos = _rint(pos)
        # cubic pads each of its taps instead (below), as PyTorch and onnxruntime do
        if padding_mode == "border" and mode != "cubic":
            pos = pos.clamp(0.0, float(size - 1))
        elif padding_mode == "reflection" and mode != "cubic":
            pos = _reflect(pos, lo, hi)
        coords.append(pos)
        lows.append(lo)
        highs.append(hi)
    # per spatial dim: the taps (integer positions, Float) and their weights
    per_dim = []
    for j, pos in enumerate(coords):
        if mode == "nearest":
            per_dim.append([(pos, None)])
            continue
        base = _floor(pos)
        frac = pos - base
        if mode == "linear":
            per_dim.append([(base, 1.0 - frac), (base + 1.0, frac)])
        else:
            per_dim.append([(base + float(o), _cubic_t(frac - float(o))) for o in (-1, 0, 1, 2)])
    strides = [math.prod(spatial[j + 1:]) for j in range(k)]
    flat_x = x.reshape([n_batch, channels, math.prod(spatial)])
    result = None
    for combo in itertools.product(*per_dim):
        index = weight = valid = None
        for j, (tap, w) in enumerate(combo):
            size = spatial[j]
            if padding_mode == "reflection":
                tap = _reflect(tap, lows[j], highs[j]).int().float()
            inside = tap.greater_equal_elem(0.0).bool_and(tap.lower_elem(float(size)))
            tap = tap.clamp(0.0, float(size - 1))
            part = tap.int() * strides[j]
            index = part if index is None else index + part
            if w is not None:
                weight = w if weight is None else weight * w
            if padding_mode == "zeros":
                valid = inside if valid is None else valid.bool_and(inside)
        picked = flat_x.gather(2, index.expand([n_batch, channels, q]))
        if valid is not None:
            factor = valid.float() if weight is None else weight.mask_where(valid.bool_not(), weight.zeros_like())
            weight = factor
        term = picked if weight is None else picked * weight
        result = term if result is None else result + term
    return result.reshape([n_batch, channels] + list(out))
