"""NdArray's recurrent module ops: an LSTM or GRU layer as one NumPy loop.

The defaults (`module_rnn.py`) cost ~15 backend calls per time step, each a
few microseconds of Python on the small `[batch, H]` states of a recurrent
layer. Here the input projection of every step is one matmul, then a step is
one matmul and about ten in-place NumPy calls (`out=`) writing straight into
the preallocated time-major outputs, which are returned as `[n, T, H]` views.

Sigmoid is computed as `0.5 * tanh(a / 2) + 0.5`: the sigmoid gates' weight
and bias columns are halved once per call (exact in binary floating point),
so one `tanh` over the whole pre-activation row serves every gate.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def _packed(weights: Sequence[np.ndarray], biases: Sequence[Any]) -> tuple[np.ndarray, Any]:
    """Fresh `[rows, k*H]` weights and `[k*H]` bias (zeros for a missing gate
    bias, None if all are missing): the caller may scale them in place."""
    w = np.concatenate(weights, axis=1)
    if all(b is None for b in biases):
        return w, None
    h = weights[0].shape[1]
    b = np.concatenate([np.zeros(h, w.dtype) if b is None else b for b in biases])
    return w, b


def _halve(cols: int, *arrays: Any) -> None:
    """Halve the first `cols` (sigmoid-gate) columns of each array in place."""
    for a in arrays:
        if a is not None:
            a[..., :cols] *= 0.5


def _projected(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """`x [n, T, d] @ w` for every step, time-major `[T, n, k]` (a fresh array)."""
    n, steps, d = x.shape
    return np.matmul(np.swapaxes(x, 0, 1).reshape(steps * n, d), w).reshape(steps, n, w.shape[1])


def _sigmoid_from_tanh(s: np.ndarray) -> None:
    """`tanh(a / 2)` -> `sigmoid(a)`, in place."""
    s *= 0.5
    s += 0.5


def lstm(x: np.ndarray, input_weights: Sequence[np.ndarray], input_biases: Sequence[Any],
         hidden_weights: Sequence[np.ndarray], hidden_biases: Sequence[Any],
         cell: np.ndarray, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = cell.shape[1]
    wx, bx = _packed(input_weights, input_biases)
    wh, bh = _packed(hidden_weights, hidden_biases)
    _halve(3 * h, wx, bx, wh, bh)   # i, o, f are sigmoid gates; g is tanh
    xs = _projected(x, wx)
    for b in (bx, bh):              # both biases add to every step's pre-activation
        if b is not None:
            xs += b
    steps, n, _ = xs.shape
    dt = xs.dtype
    cells, hiddens = np.empty((steps, n, h), dt), np.empty((steps, n, h), dt)
    z, ig = np.empty((n, 4 * h), dt), np.empty((n, h), dt)
    wh = wh.astype(dt, copy=False)
    c, hid = cell.astype(dt, copy=False), hidden.astype(dt, copy=False)
    i, o, f, g = z[:, :h], z[:, h:2 * h], z[:, 2 * h:3 * h], z[:, 3 * h:]
    for t in range(steps):
        np.matmul(hid, wh, out=z)
        z += xs[t]
        np.tanh(z, out=z)
        _sigmoid_from_tanh(z[:, :3 * h])
        ct, ht = cells[t], hiddens[t]
        np.multiply(f, c, out=ct)
        np.multiply(i, g, out=ig)
        ct += ig
        np.tanh(ct, out=ht)
        ht *= o
        c, hid = ct, ht
    return np.swapaxes(cells, 0, 1), np.swapaxes(hiddens, 0, 1)


def gru(x: np.ndarray, input_weights: Sequence[np.ndarray], input_biases: Sequence[Any],
        hidden_weights: Sequence[np.ndarray], hidden_biases: Sequence[Any],
        hidden: np.ndarray, reset_after: bool) -> np.ndarray:
    h = hidden.shape[1]
    wx, bx = _packed(input_weights, input_biases)
    _halve(2 * h, wx, bx)           # z, r are sigmoid gates; n is tanh
    xs = _projected(x, wx)
    if bx is not None:
        xs += bx
    if reset_after:
        wh, bh = _packed(hidden_weights, hidden_biases)
        _halve(2 * h, wh, bh)
        bn = None
        if bh is not None:          # z's and r's hidden biases add like the input's
            xs[..., :2 * h] += bh[:2 * h]
            bn = bh[2 * h:]         # the new gate's is scaled by r: kept apart
    else:
        wh, bh = _packed(hidden_weights[:2], hidden_biases[:2])
        wn, bn = _packed(hidden_weights[2:], hidden_biases[2:])
        _halve(2 * h, wh, bh)
        for part, b in ((slice(0, 2 * h), bh), (slice(2 * h, 3 * h), bn)):
            if b is not None:       # outside r here: every hidden bias folds in
                xs[..., part] += b
    steps, n, _ = xs.shape
    dt = xs.dtype
    out = np.empty((steps, n, h), dt)
    hs = np.empty((n, 2 * h if not reset_after else 3 * h), dt)
    zr, z, r = hs[:, :2 * h], hs[:, :h], hs[:, h:2 * h]
    if reset_after:
        nn = hs[:, 2 * h:]
    else:
        nn, rh = np.empty((n, h), dt), np.empty((n, h), dt)
        wn = wn.astype(dt, copy=False)
    wh = wh.astype(dt, copy=False)
    hid = hidden.astype(dt, copy=False)
    for t in range(steps):
        xt = xs[t]
        np.matmul(hid, wh, out=hs)
        zr += xt[:, :2 * h]
        np.tanh(zr, out=zr)
        _sigmoid_from_tanh(zr)
        if reset_after:
            if bn is not None:
                nn += bn
            nn *= r
        else:
            np.multiply(hid, r, out=rh)
            np.matmul(rh, wn, out=nn)
        nn += xt[:, 2 * h:]
        np.tanh(nn, out=nn)
        ht = out[t]
        np.subtract(hid, nn, out=ht)   # h' = n + z (h - n)
        ht *= z
        ht += nn
        hid = ht
    return np.swapaxes(out, 0, 1)
