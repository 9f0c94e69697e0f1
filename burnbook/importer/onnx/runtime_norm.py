"""Runtime helpers for `ops_norm` (see `runtime`): normalisations, pooling beyond Max/Average, resizing, sampling and attention.

Everything that touches tensor values is a Tensor operation, so it runs on
every backend and autodiff follows it. What only depends on shapes (Resize's
source positions and weights, Einsum's plan, pooling windows) is worked out
on the host with NumPy each call, from the dims of the tensors at hand.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Bool, Float, Int, Tensor

__all__: list[str] = [
    "instance_norm", "group_norm", "lp_norm", "mean_variance_norm", "rms_norm", "lrn", "lp_pool", "resize", "grid_sample",
    "einsum", "matmul_integer", "attention",
]


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


# -- normalisations ---------------------------------------------------------------------
def _channel_vector(v: Any, rank: int) -> Any:
    """A per-channel `[C]` tensor shaped `[1, C, 1, ...]` to broadcast over `[N, C, ...]`."""
    return v.reshape([1, -1] + [1] * (rank - 2))


def instance_norm(x: Any, scale: Any, bias: Any, epsilon: float) -> Any:
    """ONNX `InstanceNormalization`: each channel of each sample normalised
    over its positions, then scaled and shifted per channel."""
    return group_norm(x, x.dims()[1], epsilon, scale, bias, per_channel=True)


def group_norm(x: Any, num_groups: int, epsilon: float, scale: Any = None, bias: Any = None,
               per_channel: bool = True) -> Any:
    """ONNX `GroupNormalization`: the channels of `[N, C, ...]` split into
    `num_groups` groups, each normalised over its channels and positions.
    `scale`/`bias` are per channel (opset 21) or per group (`per_channel=False`,
    opset 18, where each group's value applies to all its channels)."""
    dims = x.dims()
    n, c = dims[0], dims[1]
    if c % num_groups:
        raise ValueError(f"GroupNormalization: {c} channels (input {dims}) do not split into {num_groups} groups")
    grouped = x.reshape([n, num_groups, -1])
    var, mean = grouped.var_mean_bias(2)
    y = ((grouped - mean) / (var + epsilon).sqrt()).reshape(dims)
    if not per_channel:
        # [G] -> [C]: each group's value repeated over its channels
        expand = lambda v: v.reshape([num_groups, 1]).expand([num_groups, c // num_groups]).reshape([c])  # noqa: E731
        scale = expand(scale) if scale is not None else None
        bias = expand(bias) if bias is not None else None
    if scale is not None:
        y = y * _channel_vector(scale, len(dims))
    if bias is not None:
        y = y + _channel_vector(bias, len(dims))
    return y


def lp_norm(x: Any, axis: int, p: int) -> Any:
    """ONNX `LpNormalization`: `x` divided by its L1 or L2 norm along `axis`;
    where the norm is 0 (all values 0) the result is 0, not NaN."""
    norm = (x * x).sum_dim(axis).sqrt() if p == 2 else x.abs().sum_dim(axis)
    return x / norm.mask_where(norm.equal_elem(0.0), norm.ones_like())


def mean_variance_norm(x: Any, axes: Sequence[int]) -> Any:
    """ONNX `MeanVarianceNormalization`: `(x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)`
    over `axes`, the statistics kept with size-1 dims."""
    rank = x.ndim
    axes = sorted(a + rank if a < 0 else a for a in axes)
    mean, mean_sq = x, x * x
    for a in axes:
        mean, mean_sq = mean.mean_dim(a), mean_sq.mean_dim(a)
    std = (mean_sq - mean * mean).sqrt()
    return (x - mean) / (std + 1e-9)


def rms_norm(x: Any, scale: Any, axis: int, epsilon: float) -> Any:
    """ONNX `RMSNormalization`: `x / sqrt(mean(x^2) + epsilon) * scale`, the
    mean over the dims from `axis` on; `scale` broadcasts as NumPy would."""
    rank = x.ndim
    axis = axis + rank if axis < 0 else axis
    sq = x * x
    for a in range(axis, rank):
        sq = sq.mean_dim(a)
    y = x / (sq + epsilon).sqrt()
    while scale.ndim < rank:
        scale = scale.unsqueeze()
    return y * scale


def lrn(x: Any, size: int, alpha: float, beta: float, bias: float) -> Any:
    """ONNX `LRN`: `x / (bias + alpha / size * sum of x^2 over the channel
    window [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta`."""
    dims = x.dims()
    c = dims[1]
    before, after = (size - 1) // 2, -(-(size - 1) // 2)
    sq = x * x
    padded_dims = list(dims)
    padded_dims[1] = c + before + after
    ranges = [(0, d) for d in dims]
    ranges[1] = (before, before + c)
    padded = type(x).zeros(padded_dims, x.device()).slice_assign(ranges, sq)
    total = None
    for k in range(size):
        part = padded.slice([slice(None), slice(k, k + c)])
        total = part if total is None else total + part
    return x / (total * (alpha / size) + bias).powf_scalar(beta)


# -- pooling ---------------------------------------------------------------------------
def lp_pool(x: Any, p: float, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
            dilations: Sequence[int] | None = None, ceil_mode: bool = False) -> Any:
    """ONNX `LpPool`: `(sum over the window of |x|^p)^(1/p)`, zero padding,
    with the same windows as `runtime.pool` (dilations, ceil mode)."""
    from .runtime import _pool_pads, pad

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
    sampled at `grid [N, O1..Om, n]` (normalised coordinates in [-1, 1], the
    last component for the first spatial dim's... reversed, x before y as in
    PyTorch). Modes linear/nearest/cubic (opset 16's bilinear/bicubic too),
    padding zeros/border/reflection. The sampling positions stay tensors, so
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
        if padding_mode == "border":
            pos = pos.clamp(0.0, float(size - 1))
        elif padding_mode == "reflection":
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


# -- Einsum and integer matmul ---------------------------------------------------------------
def _einsum_terms(equation: str, ranks: Sequence[int]) -> tuple[list[str], str]:
    """The operands' subscripts and the output's, the ellipsis spelled out as
    capital-free placeholder letters and the implicit output made explicit."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(ranks):
        raise ValueError(f"Einsum: equation {equation!r} has {len(inputs)} operands, {len(ranks)} given")
    used = set(re.sub(r"[^a-zA-Z]", "", eq))
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    width = max((r - len(t.replace("...", "")) for t, r in zip(inputs, ranks) if "..." in t), default=0)
    ell = "".join(spare[:width])
    terms = []
    for t, r in zip(inputs, ranks):
        if "..." in t:
            t = t.replace("...", ell[width - (r - len(t.replace("...", ""))):])
        if len(t) != r:
            raise ValueError(f"Einsum: subscripts {t!r} do not match an operand of rank {r}")
        terms.append(t)
    if arrow:
        output = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for t in terms:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        output = ell + "".join(sorted(ch for ch, c in counts.items() if c == 1 and ch not in ell))
    return terms, output


def _diagonal(x: Any, term: str) -> tuple[Any, str]:
    """Repeated subscripts of one operand reduced to their diagonal."""
    while True:
        seen = {}
        repeat = None
        for i, ch in enumerate(term):
            if ch in seen:
                repeat = (seen[ch], i)
                break
            seen[ch] = i
        if repeat is None:
            return x, term
        a, b = repeat
        n = x.dims()[a]
        shape = [1] * x.ndim
        shape[a], shape[b] = n, n
        eye = _like(x, np.eye(n).reshape(shape), x.kind if x.kind is not Bool else Int)
        x = (x * eye).sum_dim(b)
        x = x.reshape([d for i, d in enumerate(x.dims()) if i != b] or [1])
        term = term[:b] + term[b + 1:]


def _sum_out(x: Any, term: str, keep: set[str]) -> tuple[Any, str]:
    drop = [i for i, ch in enumerate(term) if ch not in keep]
    for i in drop:
        x = x.sum_dim(i)
    dims = [d for i, d in enumerate(x.dims()) if i not in drop]
    return (x.reshape(dims or [1]) if drop else x), "".join(ch for ch in term if ch in keep)


def _contract(a: Any, ta: str, b: Any, tb: str, keep: set[str]) -> tuple[Any, str]:
    """Two operands multiplied and summed over the subscripts they share that
    are not kept, as one batched matrix product."""
    size = {}
    for t, x in ((ta, a), (tb, b)):
        for ch, d in zip(t, x.dims()):
            size[ch] = max(size.get(ch, 1), d)
    batch = [ch for ch in ta if ch in tb and ch in keep]
    inner = [ch for ch in ta if ch in tb and ch not in keep]
    left = [ch for ch in ta if ch not in tb]
    right = [ch for ch in tb if ch not in ta]
    pa = a.permute([ta.index(ch) for ch in batch + left + inner]) if ta else a
    pb = b.permute([tb.index(ch) for ch in batch + inner + right]) if tb else b
    full_a = [size[ch] for ch in batch + left + inner]
    full_b = [size[ch] for ch in batch + inner + right]
    if pa.dims() != full_a and full_a:
        pa = pa.expand(full_a)
    if pb.dims() != full_b and full_b:
        pb = pb.expand(full_b)
    nb, nl, ni, nr = (math.prod(size[ch] for ch in g) for g in (batch, left, inner, right))
    ma = pa.reshape([nb, nl, ni])
    mb = pb.reshape([nb, ni, nr])
    if a.kind is Float:
        prod = ma.matmul(mb)
    else:  # Int: exact multiply-and-sum instead of a float product
        prod = (ma.unsqueeze_dim(3) * mb.unsqueeze_dim(1)).sum_dim(2).reshape([nb, nl, nr])
    dims = [size[ch] for ch in batch + left + right]
    return prod.reshape(dims or [1]), "".join(batch + left + right)


def einsum(equation: str, *operands: Any, ranks: Sequence[int] | None = None) -> Any:
    """ONNX `Einsum`: diagonals of repeated subscripts, sums over subscripts
    used once, then the operands contracted left to right with batched
    matrix products and the result permuted to the output's order. `ranks`
    are the ONNX ranks (0 for a scalar held as `[1]`)."""
    ranks = list(ranks) if ranks is not None else [x.ndim for x in operands]
    terms, output = _einsum_terms(equation, ranks)
    xs = []
    for x, t, r in zip(operands, terms, ranks):
        if r == 0:
            x = x.reshape([1])
            t = ""
        xs.append(x)
    work = []
    for i, (x, t) in enumerate(zip(xs, terms)):
        x, t = _diagonal(x, t) if t else (x, t)
        needed = set(output) | {ch for j, o in enumerate(terms) if j != i for ch in o}
        x, t = _sum_out(x, t, needed) if t else (x, t)
        work.append((x, t))
    x, t = work[0]
    for i in range(1, len(work)):
        later = set(output) | {ch for _, o in work[i + 1:] for ch in o}
        y, u = work[i]
        if not t:
            x, t = y * x if u else x * y, u  # a scalar operand scales the other
            continue
        if not u:
            x = x * y
            continue
        x, t = _contract(x, t, y, u, later)
    x, t = _sum_out(x, t, set(output)) if t else (x, t)
    if not output:
        return x.reshape([1]) if t else x
    return x.permute([t.index(ch) for ch in output]) if t != output else x


def matmul_integer(a: Any, b: Any, a_zero_point: Any = None, b_zero_point: Any = None) -> Any:
    """ONNX `MatMulInteger`: `(a - a_zero_point) @ (b - b_zero_point)` in
    exact integers (a zero point is a scalar, or per row of `a` / per column
    of `b`); NumPy's matmul rules for 1-D operands and batch dims."""
    a, b = a.int(), b.int()
    if a_zero_point is not None:
        za = a_zero_point.int()
        a = a - (za.reshape([1] * (a.ndim - 2) + [-1, 1]) if za.num_elements() > 1 else za.reshape([1] * a.ndim))
    if b_zero_point is not None:
        zb = b_zero_point.int()
        b = b - (zb.reshape([1] * (b.ndim - 1) + [-1]) if zb.num_elements() > 1 else zb.reshape([1] * b.ndim))
    ra, rb = a.ndim, b.ndim
    if ra == 1:
        a = a.unsqueeze()
    if rb == 1:
        b = b.unsqueeze_dim(1)
    r = max(a.ndim, b.ndim)
    while a.ndim < r:
        a = a.unsqueeze()
    while b.ndim < r:
        b = b.unsqueeze()
    out = (a.unsqueeze_dim(r) * b.unsqueeze_dim(r - 2)).sum_dim(r - 1)
    dims = out.dims()
    out = out.reshape(dims[:r - 1] + dims[r:])
    if rb == 1:
        out = out.squeeze(r - 1)
    if ra == 1 and not (rb == 1 and r == 2):
        out = out.squeeze(r - 2)
    return out


# -- Attention -------------------------------------------------------------------------------
def _host_bias(batch: int, q_len: int, kv_len: int, is_causal: bool, past: int, nonpad: np.ndarray | None,
               left_window: int, right_window: int) -> np.ndarray | None:
    """The shape-only part of Attention's bias, 0 where a query may attend a
    key and -inf where not: causal (aligned to the end of a past cache),
    a sliding window, and the padding past `nonpad_kv_seqlen` of each batch
    entry. None when nothing is masked this way."""
    i = np.arange(q_len).reshape(1, q_len, 1)
    j = np.arange(kv_len).reshape(1, 1, kv_len)
    offset = (nonpad.reshape(-1, 1, 1) - q_len) if (nonpad is not None and not past) else np.full((1, 1, 1), past)
    allowed = np.ones((offset.shape[0], q_len, kv_len), dtype=bool)
    if is_causal:
        allowed &= j <= i + offset
    if left_window >= 0:
        allowed &= (i + offset) - j <= left_window
    if right_window >= 0:
        allowed &= j - (i + offset) <= right_window
    if nonpad is not None:
        allowed = allowed & (np.arange(kv_len).reshape(1, 1, kv_len) < nonpad.reshape(-1, 1, 1))
    if allowed.all():
        return None
    return np.where(allowed, 0.0, -np.inf).reshape(allowed.shape[0], 1, q_len, kv_len)


def _heads(x: Any, heads: int) -> Any:
    """`[B, S, H * D]` -> `[B, H, S, D]`."""
    b, s, hidden = x.dims()
    return x.reshape([b, s, heads, hidden // heads]).swap_dims(1, 2)


def attention(q: Any, k: Any, v: Any, attn_mask: Any = None, past_key: Any = None, past_value: Any = None,
              nonpad_kv_seqlen: Any = None, scale: float | None = None, is_causal: bool = False,
              q_num_heads: int | None = None, kv_num_heads: int | None = None, softcap: float = 0.0,
              qk_matmul_output_mode: int = 0, left_window_size: int = -1, right_window_size: int = -1,
              outputs: int = 4) -> Any:
    """ONNX `Attention` (opsets 23-24): scaled dot-product attention over
    `[B, H, S, D]` (or `[B, S, H * D]` with the head counts given), with a
    key/value cache, grouped heads, a float or boolean mask, causal and
    windowed masking, and softcapping. Returns (Y, present_key,
    present_value, the QK product chosen by `qk_matmul_output_mode`), the
    first `outputs` of them (Y alone when 1). Rows with every key masked
    give 0, not NaN."""
    three_d = q.ndim == 3
    if three_d:
        q, k, v = _heads(q, q_num_heads), _heads(k, kv_num_heads), _heads(v, kv_num_heads)
    if scale is None:
        scale = 1.0 / math.sqrt(q.dims()[3])
    root = float(np.float32(math.sqrt(scale)))  # applied to Q and K, as the ONNX reference does
    present_key = k if past_key is None else past_key.cat([past_key, k], 2)
    present_value = v if past_value is None else past_value.cat([past_value, v], 2)
    b, heads, q_len = q.dims()[:3]
    kv_heads, kv_len = present_key.dims()[1:3]
    nonpad = _host(nonpad_kv_seqlen).astype(np.int64) if nonpad_kv_seqlen is not None else None
    past = past_key.dims()[2] if past_key is not None else 0
    host = _host_bias(b, q_len, kv_len, is_causal, past, nonpad, left_window_size, right_window_size)
    bias = None
    if attn_mask is not None:
        mask = attn_mask
        if mask.kind is Bool:
            zero = mask.float().zeros_like()
            mask = zero.mask_where(mask.bool_not(), zero - math.inf)
        missing = kv_len - mask.dims()[-1]
        if missing > 0:  # a mask shorter than the keys leaves the rest masked out
            fill = type(mask).full(mask.dims()[:-1] + [missing], -math.inf, q.device())
            mask = mask.cat([mask, fill], mask.ndim - 1)
        while mask.ndim < 4:
            mask = mask.unsqueeze()
        bias = mask
    if host is not None:
        host_t = _like(q, host)
        bias = host_t if bias is None else bias + host_t
    if heads != kv_heads:
        reps = heads // kv_heads
        repeat = lambda t: t.unsqueeze_dim(2).expand(  # noqa: E731
            [b, kv_heads, reps] + t.dims()[2:]).reshape([b, heads] + t.dims()[2:])
        keys, values = repeat(present_key), repeat(present_value)
    else:
        keys, values = present_key, present_value
    scores = (q * root).matmul(keys.swap_dims(2, 3) * root)
    if softcap > 0:
        scores = (scores / softcap).tanh() * softcap
    qk_out = scores
    if bias is not None:
        scores = scores + bias
    if qk_matmul_output_mode == 2:
        qk_out = scores
    top = scores.max_dim(3)
    top = top.mask_where(top.equal_elem(-math.inf), top.zeros_like())
    weights = (scores - top).exp()
    total = weights.sum_dim(3)
    weights = weights / total.mask_where(total.equal_elem(0.0), total.ones_like())
    if bias is not None:  # a row whose every key is masked attends nothing
        blocked = bias.max_dim(3).equal_elem(-math.inf)
        weights = weights.mask_where(blocked.expand(weights.dims()) if blocked.dims() != weights.dims()
                                     else blocked, weights.zeros_like())
    if qk_matmul_output_mode == 3:
        qk_out = weights
    y = weights.matmul(values)
    if three_d:
        y = y.swap_dims(1, 2)
        y = y.reshape(y.dims()[:2] + [-1])
    results = (y, present_key, present_value, qk_out)[:outputs]
    return results[0] if outputs == 1 else results
