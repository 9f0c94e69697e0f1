"""NdArray's scaled dot-product attention (`ModuleOps.attention`, its
weights-returning forward and its backward; the math and shapes are in
`backend/attention_ops.py`), in NumPy: the scores, mask, softmax and their
backward each run in place on one `[b, h, sq, sk]` array, where the default
makes a fresh array per primitive op (a GPT step's attention made ~10 of
them per layer, forward and backward). q, k, v arrive as strided views of
the heads' projections (`swap_dims`); one contiguous copy each lets every
batched matmul take BLAS's fast path. The batch is walked in chunks whose
scores fit the caches, and when NumPy's BLAS runs on two threads, large
scores in two halves of the batch on two threads (`_over_batch`), as
NdArray's erf and GELU split their blocks."""

from __future__ import annotations

from typing import Any

import numpy as np

from burnbook._blas import blas_threads as _blas_threads, one_thread
from burnbook._helper_thread import TWO_CORES, both



def _t(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def _heads_last(shape: tuple, dtype) -> np.ndarray:
    """An empty `[b, h, s, d]` array laid out as `[b, s, h, d]` in memory: the
    heads' merge (`swap_dims(1, 2).reshape([b, s, h * d])`) is then a view,
    where a contiguous `[b, h, s, d]` array is copied (as the head split's
    gradient is in the backward)."""
    b, h, s, d = shape
    return np.empty((b, s, h, d), dtype).transpose(0, 2, 1, 3)


def _rows(a: np.ndarray) -> np.ndarray:
    """`a`, or a contiguous copy where its matrices are not BLAS's (rows
    contiguous, the row stride a whole number of elements at least a row
    long): NumPy's matmul takes a strided view of the heads' projections
    straight to BLAS, but multiplies other layouts in its own slow loop."""
    item = a.itemsize
    ok = (a.strides[-1] == item and a.strides[-2] % item == 0 and a.strides[-2] >= a.shape[-1] * item
          and all(st % item == 0 for st in a.strides))
    return a if ok else np.ascontiguousarray(a)


def _mask_of(mask: np.ndarray, b: int, part: slice) -> np.ndarray:
    """The mask rows of batch slice `part` (a mask broadcast over the batch, `[1, ...]`, whole)."""
    return mask[part] if mask.shape[0] == b else mask


def _over_batch(b: int, size: int, work) -> None:
    """work(batch slice) over the batch, in chunks of whole batch elements
    whose scores (`_CHUNK` elements or the fewest above) stay in the CPU's
    caches while the mask, softmax and their backward pass over them (a
    whole `[b, h, sq, sk]` array at a time goes to memory on every pass);
    the chunks in two halves on two threads when NumPy's BLAS runs on two
    and the scores are big (the ufuncs and the small batched matmuls release
    the GIL)."""
    per = max(1, _CHUNK // max(1, size // max(b, 1)))   # batch elements a chunk

    def chunks(begin: int, end: int) -> None:
        for start in range(begin, end, per):
            work(slice(start, min(start + per, end)))

    # The small batched matmuls run on one BLAS thread either way: OpenBLAS's
    # own workers would spin on the core the other half needs (`_blas.py`).
    threads = _blas_threads()   # read before one_thread sets it to 1
    with one_thread(threads > 1):
        if b >= 2 and size >= _SPLIT_FROM and TWO_CORES and threads > 1:
            both(lambda: chunks(0, b // 2), lambda: chunks(b // 2, b))
        else:
            chunks(0, b)


_SPLIT_FROM = 1 << 19   # score elements [b, h, sq, sk] from which the batch is split
_CHUNK = 1 << 18        # score elements a chunk (1 MiB of f32: on a GPT step 256 KiB cost more calls than it saved)


def attention_with_weights(B: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any, scale: float,
                           fill: float) -> tuple:
    """`(out [b, h, sq, dv], weights [b, h, sq, sk])`."""
    b, h, sq, _ = q.shape
    sk, dv = k.shape[2], v.shape[3]
    w = np.empty((b, h, sq, sk), q.dtype)
    out = _heads_last((b, h, sq, dv), np.result_type(q, v))

    def work(part: slice) -> None:
        # the scale goes onto q: half the elements of the scores when d_k <= seq_k
        qs = _rows(np.multiply(q[part], q.dtype.type(scale)))
        ws = w[part]
        np.matmul(qs, _t(_rows(k[part])), out=ws)
        if mask is not None:
            np.copyto(ws, ws.dtype.type(fill), where=_mask_of(mask, b, part))
        ws -= ws.max(axis=-1, keepdims=True)
        np.exp(ws, out=ws)
        ws /= ws.sum(axis=-1, keepdims=True)
        np.matmul(ws, _rows(v[part]), out=out[part])

    _over_batch(b, w.size, work)
    return out, w


def attention(B: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any, scale: float,
              fill: float) -> np.ndarray:
    return attention_with_weights(B, q, k, v, mask, scale, fill)[0]


def attention_backward(B: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, weights: np.ndarray,
                       grad: np.ndarray, mask: Any, scale: float) -> tuple:
    """`(dq, dk, dv)`."""
    b = q.shape[0]
    dq, dk, dv = _heads_last(q.shape, q.dtype), _heads_last(k.shape, k.dtype), _heads_last(v.shape, v.dtype)

    def work(part: slice) -> None:
        g, wp = _rows(grad[part]), weights[part]
        np.matmul(_t(wp), g, out=dv[part])
        ds = np.matmul(g, _t(_rows(v[part])))
        ds -= np.einsum("...j,...j->...", ds, wp)[..., None]
        ds *= wp
        ds *= ds.dtype.type(scale)
        if mask is not None:
            np.copyto(ds, ds.dtype.type(0.0), where=_mask_of(mask, b, part))
        np.matmul(ds, _rows(k[part]), out=dq[part])
        np.matmul(_t(ds), _rows(q[part]), out=dk[part])

    _over_batch(b, weights.size, work)
    return dq, dk, dv
