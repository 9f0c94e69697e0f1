"""Reading attention weights for `AttentionView`: one array per layer, checked.

What burnbook's attention returns is `MhaOutput(weights, context)`, the
weights `[batch, n_heads, seq_q, seq_k]`; a model gives one such tensor per
layer (`TransformerEncoder.forward_with_weights`). `read_weights` takes a
list of them (or one), picks one batch item and returns a single float32
array `[n_layers, n_heads, seq_q, seq_k]`, refusing with an error that names
the layer and the shapes whatever the view could not show truthfully: a
wrong rank, layers that disagree in heads or lengths, a batch item that is
not there, NaN or Inf, negative weights (nothing after a softmax is).
`token_labels` checks the labels of one axis against its length.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["read_weights", "token_labels", "as_array"]


def as_array(value: Any, what: str) -> np.ndarray:
    """`value` (a burnbook Tensor of any backend, an `MhaOutput`, a
    PyTorch tensor, or anything NumPy reads) as a NumPy array; `what`
    names it in errors."""
    if hasattr(value, "weights") and hasattr(value, "context"):   # an MhaOutput
        value = value.weights
    if hasattr(value, "backend") and hasattr(value, "to_numpy"):
        return np.asarray(value.to_numpy())
    if hasattr(value, "detach") and hasattr(value, "cpu"):   # a PyTorch tensor, tracked or not
        value = value.detach().cpu().numpy()
    try:
        a = np.asarray(value)
    except Exception as err:  # noqa: BLE001 - any conversion failure means "not an array"
        raise TypeError(f"AttentionView: {what} is not a tensor or an array (got {type(value).__name__})") from err
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
        raise TypeError(f"AttentionView: {what} holds no numbers (got {type(value).__name__} of dtype {a.dtype})")
    return a


def read_weights(weights: Any, batch: int = 0) -> np.ndarray:
    """`weights`: a list (one per layer) of `[batch, n_heads, seq_q, seq_k]`
    or `[n_heads, seq_q, seq_k]` tensors, or a single one; -> float32
    `[n_layers, n_heads, seq_q, seq_k]` of batch item `batch`."""
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)):
        raise TypeError(f"AttentionView: batch must be an integer, got {type(batch).__name__}")
    layers = list(weights) if isinstance(weights, (list, tuple)) else [weights]
    if not layers:
        raise ValueError("AttentionView: weights is empty; give one tensor [batch, n_heads, seq_q, seq_k] per layer")
    out = []
    for i, w in enumerate(layers):
        a = as_array(w, f"layer {i}'s weights")
        shape = list(a.shape)
        if a.ndim == 4:
            if not -a.shape[0] <= batch < a.shape[0]:
                raise IndexError(f"AttentionView: batch {batch} is out of range: layer {i}'s weights {shape} "
                                 f"[batch, n_heads, seq_q, seq_k] hold {a.shape[0]} item(s)")
            a = a[batch]
        elif a.ndim == 3:
            if batch != 0:
                raise IndexError(f"AttentionView: layer {i}'s weights {shape} are [n_heads, seq_q, seq_k], one item "
                                 f"with no batch dimension, so batch must be 0, got {batch}")
        else:
            raise ValueError(f"AttentionView: layer {i}'s weights have shape {shape} (rank {a.ndim}); expected "
                             "[batch, n_heads, seq_q, seq_k] or [n_heads, seq_q, seq_k]"
                             + (" (several layers go in a list, one tensor each)" if a.ndim == 5 else ""))
        if 0 in a.shape:
            raise ValueError(f"AttentionView: layer {i}'s weights {shape} are empty")
        if out and a.shape != out[0].shape:
            raise ValueError(f"AttentionView: layer {i}'s weights {shape} give [n_heads, seq_q, seq_k] = "
                             f"{list(a.shape)}, layer 0's give {list(out[0].shape)}; every layer must have the "
                             "same heads and sequence lengths")
        a = a.astype(np.float32)
        bad = int((~np.isfinite(a)).sum())
        if bad:
            raise ValueError(f"AttentionView: layer {i}'s weights {shape} hold {bad} NaN or Inf value(s)")
        if (a < 0).any():
            raise ValueError(f"AttentionView: layer {i}'s weights {shape} hold negative values (min {a.min():.4g}); "
                             "attention weights come out of a softmax (pass the weights, not the scores)")
        out.append(a)
    return np.stack(out)


def token_labels(tokens: Sequence[Any] | str | None, n: int, axis: str, argument: str) -> list[str]:
    """`n` labels for the `axis` ("query" or "key") positions: `tokens`
    as strings (a string gives one label per character; token ids work
    too), or the positions 0..n-1 when None. `argument` names the
    parameter in the error."""
    if tokens is None:
        return [str(i) for i in range(n)]
    if hasattr(tokens, "to_numpy") or isinstance(tokens, np.ndarray):
        tokens = np.asarray(tokens.to_numpy() if hasattr(tokens, "to_numpy") else tokens).reshape(-1).tolist()
    labels = [str(t) for t in tokens]
    if len(labels) != n:
        raise ValueError(f"AttentionView: {argument} has {len(labels)} labels for {n} {axis} positions "
                         f"(seq_{axis[0]} = {n})")
    return labels
