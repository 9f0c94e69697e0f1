"""Checks for chapter 29, Attention and transformers."""

from __future__ import annotations

import numpy as np

from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, compare_function
from burnbook.tensor import Tensor

TITLE = "Attention and transformers"
_L, _SEP = 6, 10


def _shape(answer) -> str | None:
    got = as_array(answer, "your shape")
    if got.ndim != 1:
        return f"your shape is a {got.ndim}-d array; pass the shape as a flat list of sizes"
    if got.size != 4:
        return (f"your shape has {got.size} sizes; the weights keep one axis each for the batch, the heads, "
                "the queries and the keys")
    return compare(got, [8, 4, 13, 13], "your shape")


def _causal_mask(answer) -> str | None:
    inputs = [(3,), (1,), (7,), (13,)]
    return compare_function(answer, lambda seq: np.triu(np.ones((seq, seq), dtype=bool), k=1), inputs,
                            what="your causal_mask", kind="bool")


def _attention_reference(q, k, v, mask) -> np.ndarray:
    q, k, v = (t.to_numpy().astype(np.float64) for t in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.where(mask.to_numpy(), -1.0e9, scores)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v


def _attention_inputs() -> list:
    def make(batch, heads, seq, d, seed):
        def build():
            rng = np.random.default_rng(seed)
            q, k, v = (Tensor[NdArray, 4].from_floats(rng.standard_normal((batch, heads, seq, d)).astype(np.float32))
                       for _ in range(3))
            mask = Tensor[NdArray, 2].from_bool(np.triu(np.ones((seq, seq), dtype=bool), k=1))
            return q, k, v, mask
        return build
    return [make(1, 1, 3, 2, 0), make(2, 3, 5, 4, 1), make(1, 2, 7, 8, 2)]


def _attention(answer) -> str | None:
    return compare_function(answer, _attention_reference, _attention_inputs(), what="your attention",
                            rtol=1e-4, atol=1e-5)


def _solve(answer) -> str | None:
    rng = np.random.default_rng(2929)
    digits = rng.integers(0, 10, size=(200, _L))
    prompts = np.concatenate([digits, np.full((200, 1), _SEP)], axis=1)
    got = call_reader(answer, prompts.copy(), what="your solve", on="on 200 prompts [200, 7]", timeout=120.0)
    got = as_array(got, "your solve's answers")
    if got.shape != (200, _L):
        raise AnswerError(f"your solve returned shape {list(got.shape)} for prompts [200, 7]; "
                          f"it should return the {_L} answer tokens of each, [200, {_L}]")
    exact = float((got == np.sort(digits, axis=1)).all(axis=1).mean())
    if exact >= 0.9:
        return None
    return f"your solve sorts {100 * exact:.1f} % of 200 new prompts exactly (the check wants 90 %)"


EXERCISES = [
    Exercise("29", 1, "Predict the weights' shape", _shape,
             expects="the shape as a list of four sizes",
             hints=("MhaOutput's docstring names the weights' axes.",
                    "One weight per (batch item, head, query, key).")),
    Exercise("29", 2, "Write the causal mask", _causal_mask,
             expects="a function causal_mask(seq) returning a bool array [seq, seq]",
             hints=("A query at position i may see keys 0..i; True marks what it may not see.",
                    "np.triu(..., k=1) keeps what lies strictly above the diagonal.")),
    Exercise("29", 3, "Write attention", _attention,
             expects="a function attention(q, k, v, mask) returning a tensor [batch, heads, seq, d]",
             hints=("Scores are q times k transposed over the last two axes, divided by sqrt(d).",
                    "mask_fill the masked scores with a very negative number, softmax over the keys (the last "
                    "axis), then multiply by v.")),
    Exercise("29", 5, "Sort instead", _solve,
             expects="a function solve(prompts [n, 7]) returning the answers [n, 6]",
             hints=("Only the batch changes: the answer half is np.sort of the digits instead of their reverse.",
                    "Train as in the chapter (150-300 steps) on sorting batches, then generate greedily.")),
]
EXPLAINED = {4: "Why an anti-diagonal?"}
