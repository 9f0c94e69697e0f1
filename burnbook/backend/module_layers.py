"""Whole-layer module ops' defaults: `ModuleOps.lstm`, `gru`, `layer_norm`,
`gelu`, `hard_sigmoid`, and the helpers that the autodiff rules of layer norm
and GELU call: `layer_norm_with_stats` and `gelu_with_derivative` (their
tracked forwards), `layer_norm_backward` and `gelu_backward`.

A whole LSTM or GRU layer over a sequence is one backend op, so a backend can
run the recurrence as one tight loop (NdArray does, `ndarray/layers.py`);
so is a layer norm, a dozen ops that NumPy can run in place. These
defaults write the same recurrence with the protocol's primitive ops only
(`float_cat`, `float_matmul`, `float_slice`, `float_sigmoid`, ...): on
`Autodiff[B]` each of them is tracked, so the layer's gradients come from the
primitives' own backward rules, and Taichi or Fusion run them as they are.

Arguments are primitives. Each gate brings its own input weight `[d_input,
H]`, hidden weight `[H, H]` and optional biases `[H]` (burnbook's layers keep
one `Linear` per gate, with any bias possibly absent); the op packs them side
by side so that one matmul per step serves every gate. Gate orders are ONNX's:
LSTM (input, output, forget, cell), GRU (update, reset, new).
"""

from __future__ import annotations

import math
from typing import Any, Sequence


def packed(B: Any, weights: Sequence[Any], biases: Sequence[Any]) -> tuple[Any, Any]:
    """The gates' weights side by side `[rows, k*H]` and their biases as one
    `[1, k*H]` row, a missing gate bias read as zeros (None if all are)."""
    w = weights[0] if len(weights) == 1 else B.float_cat(list(weights), 1)
    if all(b is None for b in biases):
        return w, None
    present = next(b for b in biases if b is not None)
    h = B.float_shape(present)[0]
    zeros = None
    rows = []
    for b in biases:
        if b is None:
            if zeros is None:
                zeros = B.float_full((h,), 0.0, B.float_device(present), B.float_dtype(present))
            b = zeros
        rows.append(b)
    return w, B.float_reshape(B.float_cat(rows, 0), (1, len(biases) * h))


def _cols(B: Any, p: Any, start: int, size: int) -> Any:
    """Columns `start .. start+size` of a `[n, k]` primitive."""
    n = B.float_shape(p)[0]
    return B.float_slice(p, (slice(0, n, 1), slice(start, start + size, 1)))


def _projected(B: Any, x: Any, w: Any, b: Any) -> Any:
    """`x [n, T, d] @ w [d, k]` (+ b) for every step at once, time-major:
    `[T, n, k]`, so step t is a contiguous slice."""
    n, steps, d = B.float_shape(x)
    k = B.float_shape(w)[1]
    xt = B.float_reshape(B.float_swap_dims(x, 0, 1), (steps * n, d))
    out = B.float_matmul(xt, w)
    if b is not None:
        out = B.float_add(out, b)
    return B.float_reshape(out, (steps, n, k))


def _step(B: Any, xs: Any, t: int) -> Any:
    steps, n, k = B.float_shape(xs)
    return B.float_reshape(B.float_slice(xs, (slice(t, t + 1, 1), slice(0, n, 1), slice(0, k, 1))), (n, k))


def _stacked(B: Any, states: list) -> Any:
    """Per-step `[n, H]` states -> `[n, T, H]`."""
    n, h = B.float_shape(states[0])
    return B.float_cat([B.float_reshape(s, (n, 1, h)) for s in states], 1)


def _zeros_if_none(B: Any, state: Any, x: Any, h: int) -> Any:
    """An initial state, zeros `[n, H]` in x's dtype when None."""
    if state is not None:
        return state
    return B.float_full((B.float_shape(x)[0], h), 0.0, B.float_device(x), B.float_dtype(x))


def lstm(B: Any, x: Any, input_weights: Sequence[Any], input_biases: Sequence[Any],
         hidden_weights: Sequence[Any], hidden_biases: Sequence[Any], cell: Any, hidden: Any) -> tuple:
    """LSTM over `x [n, T, d_input]` from `(cell, hidden)` `[n, H]` (None:
    zeros): i, o, f = sigmoid(.), g = tanh(.), c' = f c + i g, h' = o tanh(c').
    Returns every step's `(cells, hiddens)`, each `[n, T, H]`."""
    h = B.float_shape(hidden_weights[0])[0]
    cell, hidden = _zeros_if_none(B, cell, x, h), _zeros_if_none(B, hidden, x, h)
    wx, bx = packed(B, input_weights, input_biases)
    wh, bh = packed(B, hidden_weights, hidden_biases)
    xs = _projected(B, x, wx, bx)
    cells, hiddens = [], []
    for t in range(B.float_shape(xs)[0]):
        z = B.float_matmul(hidden, wh)
        if bh is not None:
            z = B.float_add(z, bh)
        z = B.float_add(_step(B, xs, t), z)
        gates = B.float_sigmoid(_cols(B, z, 0, 3 * h))  # i, o, f: one sigmoid
        i, o, f = _cols(B, gates, 0, h), _cols(B, gates, h, h), _cols(B, gates, 2 * h, h)
        g = B.float_tanh(_cols(B, z, 3 * h, h))
        cell = B.float_add(B.float_mul(f, cell), B.float_mul(i, g))
        hidden = B.float_mul(o, B.float_tanh(cell))
        cells.append(cell)
        hiddens.append(hidden)
    return _stacked(B, cells), _stacked(B, hiddens)


def gru(B: Any, x: Any, input_weights: Sequence[Any], input_biases: Sequence[Any],
        hidden_weights: Sequence[Any], hidden_biases: Sequence[Any], hidden: Any,
        reset_after: bool) -> Any:
    """GRU over `x [n, T, d_input]` from `hidden [n, H]` (None: zeros): z, r = sigmoid(.),
    n = tanh(W_n x + b_n + r * (U_n h + c_n)) with `reset_after` (PyTorch's
    form), or tanh(W_n x + b_n + U_n (r * h) + c_n) without; h' = (1 - z) n
    + z h. Returns every step's hidden state, `[n, T, H]`."""
    h = B.float_shape(hidden_weights[0])[0]
    hidden = _zeros_if_none(B, hidden, x, h)
    wx, bx = packed(B, input_weights, input_biases)
    xs = _projected(B, x, wx, bx)
    if reset_after:
        wh, bh = packed(B, hidden_weights, hidden_biases)
    else:  # the new gate's hidden input is r * h: its own matmul
        wh, bh = packed(B, hidden_weights[:2], hidden_biases[:2])
        wn, bn = packed(B, hidden_weights[2:], hidden_biases[2:])
    hiddens = []
    for t in range(B.float_shape(xs)[0]):
        xt = _step(B, xs, t)
        hs = B.float_matmul(hidden, wh)
        if bh is not None:
            hs = B.float_add(hs, bh)
        zr = B.float_sigmoid(B.float_add(_cols(B, xt, 0, 2 * h), _cols(B, hs, 0, 2 * h)))
        z, r = _cols(B, zr, 0, h), _cols(B, zr, h, h)
        if reset_after:
            hn = B.float_mul(r, _cols(B, hs, 2 * h, h))
        else:
            hn = B.float_matmul(B.float_mul(hidden, r), wn)
            if bn is not None:
                hn = B.float_add(hn, bn)
        n = B.float_tanh(B.float_add(_cols(B, xt, 2 * h, h), hn))
        hidden = B.float_add(n, B.float_mul(z, B.float_sub(hidden, n)))
        hiddens.append(hidden)
    return _stacked(B, hiddens)


def layer_norm(B: Any, x: Any, gamma: Any, beta: Any, epsilon: float) -> Any:
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the last dim of
    `x [..., d]` (biased variance), `gamma`/`beta` `[d]`."""
    last = len(B.float_shape(x)) - 1
    centred = B.float_sub(x, B.float_mean_dim(x, last))
    var = B.float_mean_dim(B.float_mul(centred, centred), last)
    out = B.float_div(centred, B.float_sqrt(B.float_add_scalar(var, epsilon)))
    lead = (1,) * last
    g = B.float_reshape(gamma, lead + tuple(B.float_shape(gamma)))
    b = B.float_reshape(beta, lead + tuple(B.float_shape(beta)))
    return B.float_add(B.float_mul(out, g), b)


def layer_norm_with_stats(B: Any, x: Any, gamma: Any, beta: Any, epsilon: float) -> tuple[Any, Any]:
    """`(layer_norm(x, ...), stats)`: the forward an autodiff rule runs, where
    `stats` is what the backend's `layer_norm_backward` may reuse instead of
    recomputing it from x (NdArray keeps `(x^, r)`); None here."""
    return B.layer_norm(x, gamma, beta, epsilon), None


def layer_norm_backward(B: Any, x: Any, gamma: Any, grad: Any, epsilon: float,
                        stats: Any = None) -> tuple[Any, Any, Any]:
    """The gradients of `layer_norm` for the output's `grad [..., d]`: `(dx
    [..., d], dgamma [d], dbeta [d])`. With x^ = (x - mean) * r, r = 1 /
    sqrt(var + epsilon) and dy = grad * gamma, per row: dx = r (dy - mean(dy)
    - x^ mean(dy x^)); dgamma and dbeta sum grad * x^ and grad over the rows.
    Here the statistics are recomputed from x (two reductions); `stats`, what
    `layer_norm_with_stats` returned, is unused by this default."""
    shape = tuple(B.float_shape(x))
    last = len(shape) - 1
    centred = B.float_sub(x, B.float_mean_dim(x, last))
    var = B.float_mean_dim(B.float_mul(centred, centred), last)
    rstd = B.float_recip(B.float_sqrt(B.float_add_scalar(var, epsilon)))
    xhat = B.float_mul(centred, rstd)
    d = shape[-1]
    dy = B.float_mul(grad, B.float_reshape(gamma, (1,) * last + (d,)))
    inner = B.float_sub(B.float_sub(dy, B.float_mean_dim(dy, last)),
                        B.float_mul(xhat, B.float_mean_dim(B.float_mul(dy, xhat), last)))
    dx = B.float_mul(inner, rstd)
    rows = math.prod(shape[:-1])
    dgamma = B.float_reshape(B.float_sum_dim(B.float_reshape(B.float_mul(grad, xhat), (rows, d)), 0), (d,))
    dbeta = B.float_reshape(B.float_sum_dim(B.float_reshape(grad, (rows, d)), 0), (d,))
    return dx, dgamma, dbeta


def _one_plus_erf(B: Any, x: Any) -> Any:
    """1 + erf(x / sqrt 2) (2 Phi(x)), the factor GELU and its derivative share."""
    return B.float_add_scalar(B.float_erf(B.float_div_scalar(x, math.sqrt(2.0))), 1.0)


def gelu(B: Any, x: Any) -> Any:
    """x * Phi(x) with the exact error function: 0.5 x (1 + erf(x / sqrt 2)),
    in that order of ops (what `activation.gelu` did before it was one op)."""
    return B.float_mul_scalar(B.float_mul(x, _one_plus_erf(B, x)), 0.5)


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def gelu_derivative(B: Any, x: Any, one_plus_erf: Any = None) -> Any:
    """d GELU / dx = Phi(x) + x phi(x), phi being the normal density e^(-x^2/2)
    / sqrt(2 pi) (`one_plus_erf`, 2 Phi(x), when it is at hand)."""
    cdf = B.float_mul_scalar(_one_plus_erf(B, x) if one_plus_erf is None else one_plus_erf, 0.5)
    pdf = B.float_mul_scalar(B.float_exp(B.float_mul_scalar(B.float_mul(x, x), -0.5)), _INV_SQRT_2PI)
    return B.float_add(cdf, B.float_mul(x, pdf))


def gelu_backward(B: Any, x: Any, grad: Any) -> Any:
    """The gradient of the exact GELU for the output's `grad`: grad (Phi(x) +
    x phi(x)) (Burn's `ActivationOps::gelu_backward`). Written with
    primitives, so on `Autodiff[B]` it is itself differentiable (second
    derivatives)."""
    return B.float_mul(grad, gelu_derivative(B, x))


def gelu_with_derivative(B: Any, x: Any) -> tuple[Any, Any]:
    """`(gelu(x), Phi(x) + x phi(x))`: the forward an autodiff rule runs, so
    its backward is one product, grad * derivative. Where B's `gelu` is this
    module's formula (Taichi, Fusion), both come from one erf; a backend with
    a `gelu` of its own gets that op's output (NdArray overrides this too)."""
    if getattr(B.gelu, "__func__", None) is not gelu:
        return B.gelu(x), gelu_derivative(B, x)
    one_plus_erf = _one_plus_erf(B, x)
    return B.float_mul_scalar(B.float_mul(x, one_plus_erf), 0.5), gelu_derivative(B, x, one_plus_erf)


def hard_sigmoid(B: Any, x: Any, alpha: float, beta: float) -> Any:
    """max(0, min(1, alpha x + beta)) (ONNX's HardSigmoid; MobileNetV3's
    hard swish is x times it, with alpha 1/6 and beta 1/2)."""
    return B.float_clamp(B.float_add_scalar(B.float_mul_scalar(x, alpha), beta), 0.0, 1.0)
