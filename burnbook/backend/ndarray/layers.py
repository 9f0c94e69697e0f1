"""NdArray's whole-layer module ops: an LSTM or GRU layer as one NumPy loop;
a layer norm and its backward as a few in-place NumPy calls; GELU and its
backward through `gelu.py`'s table of Phi.

The recurrent defaults (`backend/module_layers.py`) cost ~15 backend calls
per time step, each a few microseconds of Python on the small `[batch, H]`
states of a recurrent layer. Here the input projection of every step is one matmul, then a step is
one matmul and about ten in-place NumPy calls (positional `out`) writing
straight into preallocated outputs.

Everything runs feature-major: a state is `[H, n]` and the gates' weights
are stacked as rows, `W^T [k*H, d]`, so a step's pre-activation is `W_h^T @
h [k*H, n]` and every gate is a contiguous block of rows. (Batch-major
`[n, k*H]` gate columns are strided views, which NumPy's ufuncs walk several
times slower once n > 1.) The outputs `[T, H, n]` are returned as `[n, T, H]`
views.

Sigmoid is computed as `0.5 * tanh(a / 2) + 0.5`: the sigmoid gates' weight
and bias rows are halved once per call (exact in binary floating point), so
one `tanh` over the whole pre-activation serves every gate.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from burnbook._blas import one_thread

from .. import module_layers
from .cache import cached
from .gelu import gelu_backward_f32, gelu_f32, gelu_with_derivative_f32


def _rows(weights: Sequence[np.ndarray]) -> np.ndarray:
    """The gates' `[rows, H]` weights as one fresh feature-major `[k*H, rows]`."""
    return np.concatenate([g.T for g in weights], axis=0)


def _column(biases: Sequence[Any], h: int, dtype: np.dtype) -> Any:
    """The gates' `[H]` biases as one fresh `[k*H, 1]` column, zeros for a
    missing one; None if all are missing."""
    if all(b is None for b in biases):
        return None
    return np.concatenate([np.zeros(h, dtype) if b is None else b for b in biases]).reshape(-1, 1)


def _sum(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


def _halve(rows: int, *arrays: Any) -> None:
    """Halve the first `rows` (sigmoid-gate) rows of each array in place."""
    for a in arrays:
        if a is not None:
            np.multiply(a[:rows], 0.5, a[:rows])


def _lstm_weights(input_weights, input_biases, hidden_weights, hidden_biases) -> tuple:
    """`(W_x^T, W_h^T, b)`: packed, sigmoid rows halved, both biases in one
    column (they add to the same pre-activation)."""
    wx, wh = _rows(input_weights), _rows(hidden_weights)
    h = wh.shape[1]
    b = _sum(_column(input_biases, h, wx.dtype), _column(hidden_biases, h, wx.dtype))
    _halve(3 * h, wx, wh, b)   # i, o, f are sigmoid gates; g is tanh
    return wx, wh, b


def _gru_weights(input_weights, input_biases, hidden_weights, hidden_biases, reset_after: bool) -> tuple:
    """`(W_x^T, W_h^T, b, U_n^T, c_n)`, sigmoid rows halved. `b` holds every
    bias outside the reset gate's reach: with `reset_after` the new gate's
    hidden bias `c_n` stays apart (scaled by r) and `W_h^T` has all three
    gates; without, `W_h^T` has z and r, and `U_n^T` the new gate's (its
    input r * h is only known inside the step)."""
    h = hidden_weights[0].shape[1]
    wx = _rows(input_weights)
    bx, bh = _column(input_biases, h, wx.dtype), _column(hidden_biases, h, wx.dtype)
    cn = None
    if reset_after:
        wh, un = _rows(hidden_weights), None
        if bh is not None:
            cn = bh[2 * h:].copy()
            bh[2 * h:] = 0.0
    else:
        wh, un = _rows(hidden_weights[:2]), _rows(hidden_weights[2:])
    b = _sum(bx, bh)
    _halve(2 * h, wx, wh, b)             # z, r are sigmoid gates; n is tanh
    return wx, wh, b, un, cn


def _projected(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """`w [k, d] @ x_t^T` for every step t of `x [n, T, d]`: `[T, k, n]`, fresh."""
    return np.matmul(w, x.transpose(1, 2, 0))


def _state(p: Any, h: int, n: int, dt: np.dtype) -> np.ndarray:
    """A `[n, H]` state (None: zeros) as a contiguous feature-major `[H, n]`."""
    return np.zeros((h, n), dt) if p is None else np.ascontiguousarray(p.T, dtype=dt)


def lstm(x: np.ndarray, input_weights: Sequence[np.ndarray], input_biases: Sequence[Any],
         hidden_weights: Sequence[np.ndarray], hidden_biases: Sequence[Any],
         cell: np.ndarray, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = hidden_weights[0].shape[0]
    wx, wh, b = cached("lstm", (*input_weights, *input_biases, *hidden_weights, *hidden_biases),
                        lambda: _lstm_weights(input_weights, input_biases, hidden_weights, hidden_biases))
    xs = _projected(x, wx)
    if b is not None:
        xs += b
    steps, _, n = xs.shape
    dt = xs.dtype
    cells, hiddens = np.empty((steps, h, n), dt), np.empty((steps, h, n), dt)
    z, ig = np.empty((4 * h, n), dt), np.empty((h, n), dt)
    wh = wh.astype(dt, copy=False)
    c, hid = _state(cell, h, n, dt), _state(hidden, h, n, dt)
    i, o, f, g, s = z[:h], z[h:2 * h], z[2 * h:3 * h], z[3 * h:], z[:3 * h]
    half = np.array(0.5, dt)
    # positional `out` and 0-d constants: each call costs about half of
    # the keyword / Python-float form on these small states
    dot, add, mul, tanh = np.dot, np.add, np.multiply, np.tanh
    for xt, ct, ht in zip(xs, cells, hiddens):   # each a step's [k, n] view
        dot(wh, hid, z)
        add(z, xt, z)
        tanh(z, z)
        mul(s, half, s)             # tanh(a / 2) -> sigmoid(a) = 0.5 tanh + 0.5
        add(s, half, s)
        mul(f, c, ct)
        mul(i, g, ig)
        add(ct, ig, ct)
        tanh(ct, ht)
        mul(ht, o, ht)
        c, hid = ct, ht
    return cells.transpose(2, 0, 1), hiddens.transpose(2, 0, 1)


def gru(x: np.ndarray, input_weights: Sequence[np.ndarray], input_biases: Sequence[Any],
        hidden_weights: Sequence[np.ndarray], hidden_biases: Sequence[Any],
        hidden: np.ndarray, reset_after: bool) -> np.ndarray:
    h = hidden_weights[0].shape[0]
    wx, wh, b, wn, bn = cached(
        f"gru{int(reset_after)}", (*input_weights, *input_biases, *hidden_weights, *hidden_biases),
        lambda: _gru_weights(input_weights, input_biases, hidden_weights, hidden_biases, reset_after))
    xs = _projected(x, wx)
    if b is not None:
        xs += b
    steps, _, n = xs.shape
    dt = xs.dtype
    out = np.empty((steps, h, n), dt)
    hs = np.empty((3 * h if reset_after else 2 * h, n), dt)
    zr, z, r = hs[:2 * h], hs[:h], hs[h:2 * h]
    if reset_after:
        nn = hs[2 * h:]
        if bn is not None:          # a full [H, n] block: a broadcast add is slower
            bn = np.ascontiguousarray(np.broadcast_to(bn, (h, n)), dtype=dt)
    else:
        nn, rh = np.empty((h, n), dt), np.empty((h, n), dt)
        wn = wn.astype(dt, copy=False)
    wh = wh.astype(dt, copy=False)
    hid = _state(hidden, h, n, dt)
    half = np.array(0.5, dt)
    dot, add, sub, mul, tanh = np.dot, np.add, np.subtract, np.multiply, np.tanh
    for xzr, xn, ht in zip(xs[:, :2 * h], xs[:, 2 * h:], out):
        dot(wh, hid, hs)
        add(zr, xzr, zr)
        tanh(zr, zr)
        mul(zr, half, zr)           # tanh(a / 2) -> sigmoid(a)
        add(zr, half, zr)
        if reset_after:
            if bn is not None:
                add(nn, bn, nn)
            mul(nn, r, nn)
        else:
            mul(hid, r, rh)
            dot(wn, rh, nn)
        add(nn, xn, nn)
        tanh(nn, nn)
        sub(hid, nn, ht)            # h' = n + z (h - n)
        mul(ht, z, ht)
        add(ht, nn, ht)
        hid = ht
    return out.transpose(2, 0, 1)


def layer_norm_backward(B: type, x: np.ndarray, gamma: np.ndarray, grad: np.ndarray, epsilon: float,
                        stats: tuple | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The default's formulas (`module_layers.layer_norm_backward`) on the
    forward's `stats` = (x^, r) (recomputed when None): dx = r (dy - mean(dy)
    - x^ mean(dy x^)), dy = grad gamma; dgamma, dbeta the column sums of grad
    x^ and grad. The row and column sums are matrix-vector products with a
    ones vector (BLAS, several times faster than NumPy's short-row sums)."""
    d = x.shape[-1]
    if x.dtype.char == "e" or d == 0 or x.size == 0:
        return module_layers.layer_norm_backward(B, x, gamma, grad, epsilon)
    xhat, rstd = stats if stats is not None else _stats(x, epsilon)
    with one_thread():   # matrix-vector products: OpenBLAS's workers would only spin after
        return _layer_norm_grads(x, gamma, grad, xhat, rstd)


def _layer_norm_grads(x: np.ndarray, gamma: np.ndarray, grad: np.ndarray, xhat: np.ndarray,
                      rstd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`layer_norm_backward`'s arithmetic on `[rows, d]` views, in place on two scratch arrays."""
    d = x.shape[-1]
    rows = x.size // d
    g2, xh2 = grad.reshape(rows, d), xhat.reshape(rows, d)
    ones_d, ones_rows = np.ones(d, x.dtype), np.ones(rows, x.dtype)
    dbeta = ones_rows @ g2
    gx = np.multiply(g2, xh2)
    dgamma = ones_rows @ gx
    dy = np.multiply(g2, gamma)
    inv_d = x.dtype.type(1.0 / d)
    mean_dy = (dy @ ones_d)[:, None] * inv_d
    np.multiply(dy, xh2, out=gx)
    mean_dyx = (gx @ ones_d)[:, None] * inv_d
    np.subtract(dy, mean_dy, out=dy)
    np.multiply(xh2, mean_dyx, out=gx)
    np.subtract(dy, gx, out=dy)
    np.multiply(dy, rstd.reshape(rows, 1), out=dy)
    return dy.reshape(x.shape), dgamma, dbeta


def layer_norm_with_stats(B: type, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                          epsilon: float) -> tuple[np.ndarray, tuple | None]:
    """(`layer_norm`'s output and (x^, r) for the backward: x^
    `[..., d]` before gamma and beta are applied, r = 1 / sqrt(var +
    epsilon) `[..., 1]`)."""
    if x.dtype.char == "e" or x.shape[-1] == 0:
        return module_layers.layer_norm(B, x, gamma, beta, epsilon), None
    stats = _stats(x, epsilon)
    out = np.multiply(stats[0], gamma)
    return np.add(out, beta, out), stats


def _stats(x: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(x^, r = 1 / sqrt(var + epsilon)): what the backward reads, from `_standardised`."""
    xhat, std = _standardised(x, epsilon)
    return xhat, np.reciprocal(std, out=std)


def _standardised(x: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """((x - mean) / sqrt(var + epsilon), sqrt(var + epsilon) `[..., 1]`) over
    the last dim, the default's formula on one fresh array. From
    `_ROW_SUMS_BY_BLAS` elements on, the two row sums are matrix-vector
    products with a ones vector (BLAS, on one thread), as in the backward:
    NumPy's sums along many short rows cost more (a GPT step's `[2048, 128]`:
    0.30 ms a layer norm against 0.53); below, NumPy's sums, without BLAS's
    set-up cost (an imported MLP's `[1, 64]`: 13 us against 22)."""
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    ones = np.ones(d, x.dtype) if x.size >= _ROW_SUMS_BY_BLAS else None
    mean = np.true_divide(_row_sums(x2, ones), d)
    out = np.subtract(x2, mean[:, None])
    var = _row_sums(np.multiply(out, out), ones)
    np.true_divide(var, d, var)
    np.add(var, epsilon, var)
    std = np.sqrt(var, var)[:, None]
    np.divide(out, std, out)
    return out.reshape(x.shape), std.reshape(x.shape[:-1] + (1,))


def _row_sums(a: np.ndarray, ones: np.ndarray | None) -> np.ndarray:
    """The sums of `a [rows, d]`'s rows: `a @ ones` on one BLAS thread (its
    workers would only spin after a matrix-vector product), or NumPy's sums
    when `ones` is None."""
    if ones is None:
        return np.add.reduce(a, axis=-1)
    with one_thread():
        return a @ ones


_ROW_SUMS_BY_BLAS = 1 << 15   # elements from which layer norm's row sums run through BLAS (measured crossover ~32K)


def layer_norm(B: type, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, epsilon: float) -> np.ndarray:
    """The default's formula on one fresh array, updated in place (`_standardised`)."""
    if x.dtype.char == "e" or x.shape[-1] == 0:  # f16 sums in f32; empty rows: the default's NaN
        return module_layers.layer_norm(B, x, gamma, beta, epsilon)
    out = _standardised(x, epsilon)[0]
    np.multiply(out, gamma, out)
    return np.add(out, beta, out)


# From this size on the table GELU (`gelu.py`) beats SciPy's ndtr, which is
# not vectorised (a cephes call an element in f64).
_GELU_NDTR_BELOW = 4096


def gelu(B: type, x: np.ndarray) -> np.ndarray:
    """x * Phi(x): below `_GELU_NDTR_BELOW` elements Phi is SciPy's normal CDF
    (`special.ndtr`, computed in f64 and rounded), within 1.5 ulp; larger
    f32 arrays read Phi from a table (`gelu.gelu_f32`, within 2.3 ulp and
    several times faster than the exact erf). f16 runs in f32; f64 is the
    default's formula with libm's erf."""
    if x.dtype == np.float64:
        return module_layers.gelu(B, x)
    if x.dtype.char == "e":
        return gelu(B, x.astype(np.float32)).astype(np.float16)
    if x.size >= _GELU_NDTR_BELOW:
        return gelu_f32(x)
    from scipy.special import ndtr   # imported on first use: SciPy takes ~0.1 s to load

    phi = ndtr(x)
    return np.multiply(x, phi, out=phi)


def gelu_backward(B: type, x: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """grad * (Phi(x) + x phi(x)) from the table (`gelu.gelu_backward_f32`) for
    f32 (f16 in f32); f64 the default's formula."""
    if x.dtype == np.float64:
        return module_layers.gelu_backward(B, x, grad)
    if x.dtype.char == "e":
        return gelu_backward_f32(x.astype(np.float32), grad.astype(np.float32)).astype(np.float16)
    return gelu_backward_f32(x, grad)


def gelu_with_derivative(B: type, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gelu(x), Phi(x) + x phi(x)) in one pass of the table for large f32
    arrays (f16 in f32); `gelu` and the default's derivative below
    `_GELU_NDTR_BELOW` elements (so a tracked GELU gives `gelu`'s bits) and for
    f64."""
    if x.dtype == np.float64 or x.size < _GELU_NDTR_BELOW:
        return gelu(B, x), module_layers.gelu_derivative(B, x)
    if x.dtype.char == "e":
        out, derivative = gelu_with_derivative_f32(x.astype(np.float32))
        return out.astype(np.float16), derivative.astype(np.float16)
    return gelu_with_derivative_f32(x)


def hard_sigmoid(B: type, x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The default's three ops (the same bits) on one fresh array, in place."""
    out = np.multiply(x, alpha)
    np.add(out, beta, out=out)
    return np.clip(out, np.asarray(0.0, out.dtype), np.asarray(1.0, out.dtype), out=out)
