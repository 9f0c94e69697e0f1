"""Runtime helpers for ONNX `Einsum`, `MatMulInteger` and `Attention` (`ops/attention`)."""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Bool, Float

from .resampling import _host, _like

# -- Einsum and integer matmul ---------------------------------------------------------------
def _einsum_terms(equation: str, ranks: Sequence[int]) -> tuple[list[str], str]:
    """The operands' subscripts and the output's, the ellipsis spelled out
    with letters the equation does not use, and an implicit output (the
    letters used once, sorted, after the ellipsis) made explicit."""
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
        eye = _like(x, np.eye(n).reshape(shape), x.kind)
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
    present_key = k if past_key is None else type(k).cat([past_key, k], 2)
    present_value = v if past_value is None else type(v).cat([past_value, v], 2)
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
            mask = type(mask).cat([mask, fill], mask.ndim - 1)
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
