"""Runtime helpers for the normalisations (`ops/norm`): LayerNormalization
with its Mean and InvStdDev outputs, BatchNormalization in training mode,
InstanceNormalization, GroupNormalization, LpNormalization,
MeanVarianceNormalization, RMSNormalization and LRN.

Everything is a Tensor operation, so it runs on every backend and autodiff
follows it.
"""

from __future__ import annotations

from typing import Any, Sequence

from burnbook.tensor import Tensor
from burnbook.tensor import module as F

from .layout import align


def layer_norm(x: Any, axis: int, epsilon: float, scale: Any = None, bias: Any = None) -> tuple:
    """ONNX `LayerNormalization` over dims `axis..`: returns (y, mean,
    1/std), the mean and inverse deviation kept with size-1 dims.

    `y` is `F.layer_norm`, the formula `nn.LayerNorm` and every backend's
    `layer_norm` compute, `(x - mean) / sqrt(var + epsilon)`, over the
    normalised dims folded into one last dim; `scale` and `bias` (which
    may broadcast) are applied after it, as the layer applies its own."""
    rank = x.ndim
    axis = axis + rank if axis < 0 else axis
    dims = x.dims()
    folded = x.reshape(dims[:axis] + [-1]) if axis < rank else x
    features = folded.dims()[-1]
    vector = Tensor[x.backend, 1]
    ones = vector.ones([features], x.device()).cast(x.dtype.np)
    zeros = vector.zeros([features], x.device()).cast(x.dtype.np)
    y = F.layer_norm(folded, ones, zeros, epsilon).reshape(dims)
    if scale is not None:
        y = y * align(scale, rank)
    if bias is not None:
        y = y + align(bias, rank)
    var, mean = folded.var_mean_bias(axis)
    inv = (var + epsilon).sqrt().recip()
    stat = dims[:axis] + [1] * (rank - axis)
    return y, mean.reshape(stat), inv.reshape(stat)


def batch_norm_train(x: Any, scale: Any, bias: Any, mean: Any, var: Any, epsilon: float,
                     momentum: float) -> tuple:
    """ONNX `BatchNormalization` with `training_mode=1`: normalise with the
    batch's mean and (population) variance per channel of `[N, C, ...]`, and
    return the updated running mean and variance,
    `running = running * momentum + batch * (1 - momentum)`."""
    dims = x.dims()
    c = dims[1]
    per_channel = x.swap_dims(0, 1).reshape([c, -1])
    batch_var, batch_mean = per_channel.var_mean_bias(1)
    shape = [1, c] + [1] * (len(dims) - 2)
    y = (x - batch_mean.reshape(shape)) / (batch_var.reshape(shape) + epsilon).sqrt()
    y = y * scale.reshape(shape) + bias.reshape(shape)
    new_mean = mean * momentum + batch_mean.reshape([c]) * (1.0 - momentum)
    new_var = var * momentum + batch_var.reshape([c]) * (1.0 - momentum)
    return y, new_mean, new_var


def _channel_vector(v: Any, rank: int) -> Any:
    """A per-channel `[C]` tensor shaped `[1, C, 1, ...]` to broadcast over `[N, C, ...]`."""
    return v.reshape([1, -1] + [1] * (rank - 2))


def instance_norm(x: Any, scale: Any, bias: Any, epsilon: float) -> Any:
    """ONNX `InstanceNormalization`: each channel of each sample normalised
    over its positions, then scaled and shifted per channel."""
    return group_norm(x, x.dims()[1], epsilon, scale, bias, per_channel=True)


def group_norm(x: Any, num_groups: int, epsilon: float, scale: Any = None, bias: Any = None,
               per_channel: bool = True, stash: str | None = None) -> Any:
    """ONNX `GroupNormalization`: the channels of `[N, C, ...]` split into
    `num_groups` groups, each normalised over its channels and positions.
    `scale`/`bias` are per channel (opset 21) or per group (`per_channel=False`,
    opset 18, where each group's value applies to all its channels).

    `stash` (opset 21's `stash_type`, a NumPy float name) is the type the
    mean, variance and normalisation are computed in; the normalised values
    return to x's type before the scale and bias, as the spec's function
    body does. None computes in x's type (opset 18)."""
    dims = x.dims()
    n, c = dims[0], dims[1]
    if c % num_groups:
        raise ValueError(f"GroupNormalization: {c} channels (input {dims}) do not split into {num_groups} groups")
    dtype = x.dtype
    stashed = x if stash is None or dtype.np.name == stash else x.cast(stash)
    grouped = stashed.reshape([n, num_groups, -1])
    var, mean = grouped.var_mean_bias(2)
    y = ((grouped - mean) / (var + epsilon).sqrt()).reshape(dims)
    if stashed is not x:
        y = y.cast(dtype.np)
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
