"""Every loss against PyTorch: value and input gradient, at the extremes
(logits of ±1e4, probabilities of exactly 0 and 1, sigmoid outputs of
logits ±20 to ±88, residuals exactly at Huber's delta)."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.tensor import activation as act
from .helpers import F32, TAIL, Tol, match, run_ours, run_torch, seeded, torch

F = torch.nn.functional

TARGETS = np.array([2, 0, 1, 2], np.int64)
LOGITS = {"unit": seeded([4, 3], 30),
          # Huge logits: softmax is one-hot and log_softmax a difference of them.
          "large": np.array([[1e4, -1e4, 0.0], [3e4, 3e4, -3e4], [-5e3, 2e4, 2e4 - 1], [0.5, -0.5, 1e4]],
                            np.float32)}
CE_CASES = {
    "plain": (nn.CrossEntropyLossConfig(), {}),
    "smoothing": (nn.CrossEntropyLossConfig(smoothing=0.1), {"label_smoothing": 0.1}),
    "weights": (nn.CrossEntropyLossConfig(weights=[0.5, 2.0, 1.0]), {"weight": torch.tensor([0.5, 2.0, 1.0])}),
    "pad": (nn.CrossEntropyLossConfig(pad_tokens=[1]), {"ignore_index": 1}),
}


@pytest.mark.parametrize("logits", list(LOGITS))
@pytest.mark.parametrize("case", list(CE_CASES))
def test_cross_entropy(B, case: str, logits: str) -> None:
    config, kwargs = CE_CASES[case]
    loss = config.init(backend=B)
    x = LOGITS[logits]
    # Sums of at most 12 terms; with logits of 1e4 the log-sum-exp is one
    # logit plus log(1 + tiny), relative to the logits' size.
    tol = F32 if logits == "unit" else Tol(1e-5, 1e-3)
    match(run_ours(B, loss, lambda m, x, t: m.forward(x, t).reshape([1]), x, TARGETS),
          run_torch(lambda x, t: F.cross_entropy(x, t, **kwargs).reshape(1), x, TARGETS), {}, tol)


def test_cross_entropy_on_probabilities(B) -> None:
    """`logits=False`: the inputs are probabilities, exact 0s included; log
    is taken of max(p, 2^-63), torch's nll_loss of the same clamped log."""
    p = np.array([[0.0, 0.2, 0.8], [1.0, 0.0, 0.0], [0.3, 0.3, 0.4], [0.0, 1.0, 0.0]], np.float32)
    eps = 2.0 ** -63
    loss = nn.CrossEntropyLossConfig(logits=False).init(backend=B)
    match(run_ours(B, loss, lambda m, x, t: m.forward(x, t).reshape([1]), p, TARGETS),
          run_torch(lambda x, t: F.nll_loss(torch.log(x.clamp_min(eps)), t).reshape(1), p, TARGETS), {}, F32)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_and_huber_reductions(B, reduction: str) -> None:
    pred, target = seeded([3, 4], 33, 2.0), seeded([3, 4], 34)
    r = nn.Reduction.Sum if reduction == "sum" else nn.Reduction.Mean
    mse, huber = nn.MseLoss(), nn.HuberLossConfig(0.5).init()

    def ours(m, p, t):
        return mse.forward(p, t, r).reshape([1]).add(huber.forward(p, t, r).reshape([1]))

    def theirs(p, t):
        return (F.mse_loss(p, t, reduction=reduction) + F.huber_loss(p, t, reduction=reduction, delta=0.5)).reshape(1)

    match(run_ours(B, None, ours, pred, target), run_torch(theirs, pred, target), {}, F32)


def test_mse_large_magnitudes(B) -> None:
    pred, target = seeded([3, 4], 31, 1e4), seeded([3, 4], 32, 1e4)
    match(run_ours(B, nn.MseLoss(), lambda m, p, t: m.forward(p, t).reshape([1]), pred, target),
          run_torch(lambda p, t: F.mse_loss(p, t).reshape(1), pred, target), {}, Tol(1e-5, 0.0))


def test_huber_on_both_sides_of_delta(B) -> None:
    target = np.zeros(9, np.float32)
    pred = np.array([-100.0, -1.5, -1.0, -0.3, 0.0, 0.3, 1.0, 1.5, 100.0], np.float32)  # delta = 1 exactly
    loss = nn.HuberLossConfig(1.0).init()
    match(run_ours(B, loss, lambda m, p, t: m.forward(p, t).reshape([1]), pred, target),
          run_torch(lambda p, t: F.huber_loss(p, t, delta=1.0).reshape(1), pred, target), {}, F32)


def _labels(B: type, y: np.ndarray) -> Tensor:
    """Float targets that are data, not variables: torch's gradient with
    respect to a target takes the unclamped log(0) and is no reference."""
    return Tensor[B, y.ndim].from_data(y)


# Probabilities of exactly 0 and 1, right and wrong, and soft targets.
PROBS = np.array([0.0, 1.0, 0.0, 1.0, 1e-7, 1 - 1e-7, 0.3, 0.5, 0.9], np.float32)
PROB_TARGETS = np.array([0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.25, 0.0], np.float32)


def test_bce_on_probabilities_of_zero_and_one(B) -> None:
    """PyTorch clamps each log at -100 and its gradient is (p - y) /
    max(p (1 - p), 1e-12): 0 for correct confident predictions, ±1e12 / n
    for wrong ones; never NaN."""
    loss = nn.BinaryCrossEntropyLossConfig().init(backend=B)
    match(run_ours(B, loss, lambda m, p: m.forward(p, _labels(B, PROB_TARGETS)).reshape([1]), PROBS),
          run_torch(lambda p: F.binary_cross_entropy(p, torch.tensor(PROB_TARGETS)).reshape(1), PROBS), {}, F32)


LOGIT_TAILS = np.array([-88.0, -50.0, -20.0, -1.0, 0.0, 1.0, 20.0, 50.0, 88.0], np.float32)
LOGIT_TARGETS = np.array([1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0], np.float32)


def test_sigmoid_then_bce(B) -> None:
    """The issue's case among others: logit -20, target 1 gives loss 20 and
    gradient -1 (times 1/n); past sigmoid's f32 range (1 - sigmoid(20) is
    0 in f32) both libraries clamp at 100."""
    loss = nn.BinaryCrossEntropyLossConfig().init(backend=B)
    y = torch.tensor(LOGIT_TARGETS)
    match(run_ours(B, loss, lambda m, x: m.forward(act.sigmoid(x), _labels(B, LOGIT_TARGETS)).reshape([1]),
                   LOGIT_TAILS),
          run_torch(lambda x: F.binary_cross_entropy(torch.sigmoid(x), y).reshape(1), LOGIT_TAILS), {}, TAIL)


@pytest.mark.parametrize("scale", [1.0, 1.0 / 88.0 * 100.0], ids=["tails", "beyond"])
def test_bce_with_logits(B, scale: float) -> None:
    loss = nn.BinaryCrossEntropyLossConfig(logits=True).init(backend=B)
    x = LOGIT_TAILS * np.float32(scale)
    y = torch.tensor(LOGIT_TARGETS)
    match(run_ours(B, loss, lambda m, x: m.forward(x, _labels(B, LOGIT_TARGETS)).reshape([1]), x),
          run_torch(lambda x: F.binary_cross_entropy_with_logits(x, y).reshape(1), x), {}, TAIL)


def test_bce_weights_and_smoothing(B) -> None:
    """Class weights per last-dim column and label smoothing alpha: the
    targets become (1 - alpha) y + alpha / 2 (2 classes), torch's weight=."""
    loss = nn.BinaryCrossEntropyLossConfig(weights=[0.5, 2.0, 1.0], smoothing=0.2).init(backend=B)
    p = PROBS.reshape(3, 3)
    y = (PROB_TARGETS.reshape(3, 3) > 0.5).astype(np.int64)
    smoothed = (y * 0.8 + 0.2 / 3).astype(np.float32)
    w = torch.tensor([0.5, 2.0, 1.0])
    match(run_ours(B, loss, lambda m, p, t: m.forward(p, t).reshape([1]), p, y),
          run_torch(lambda p: F.binary_cross_entropy(p, torch.tensor(smoothed), weight=w).reshape(1), p), {}, F32)
