"""Every loss, value and gradient, against torch.nn.functional."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Int, Tensor, nn
from burnbook.backend import NdArray
from burnbook.nn.loss import Reduction

from .helpers import B, assert_close, seeded, t64

torch = pytest.importorskip("torch")
F = torch.nn.functional

TARGETS = np.array([0, 3, 1, 3, 2, 0])


def _both(loss_fn, ref_fn, pred: np.ndarray, *others) -> None:
    """Compare loss values and the gradient w.r.t. `pred`."""
    x = Tensor[B, pred.ndim].from_data(pred).require_grad()
    loss = loss_fn(x, *others)
    assert loss.dims() == [1]
    grads = loss.backward()
    xt = t64(pred, grad=True)
    ref = ref_fn(xt)
    ref.backward()
    assert_close(loss.to_numpy(), [ref.item()], "loss")
    assert_close(x.grad(grads).to_numpy(), xt.grad.numpy(), "gradient")


def _targets(values=TARGETS):
    return Tensor[B, 1, Int].from_data(values)


@pytest.mark.parametrize("smoothing", [None, 0.1])
@pytest.mark.parametrize("weights", [None, [1.0, 2.0, 0.5, 3.0]])
@pytest.mark.parametrize("pad", [None, 3])
def test_cross_entropy_matches_torch(smoothing, weights, pad) -> None:
    logits = seeded([6, 4], 1, scale=3.0)
    cfg = nn.CrossEntropyLossConfig(pad_tokens=None if pad is None else [pad], weights=weights, smoothing=smoothing)
    loss = cfg.init()
    kw = dict(label_smoothing=smoothing or 0.0)
    if weights is not None:
        kw["weight"] = torch.tensor(weights, dtype=torch.float64)
    if pad is not None:
        kw["ignore_index"] = pad
    _both(loss.forward, lambda x: F.cross_entropy(x, torch.tensor(TARGETS), **kw), logits, _targets())


def test_cross_entropy_is_stable_for_huge_logits() -> None:
    logits = np.array([[1000.0, 0.0, -1000.0], [0.0, 500.0, 0.0]], dtype=np.float32)
    targets = np.array([0, 2])
    _both(nn.CrossEntropyLoss.new().forward, lambda x: F.cross_entropy(x, torch.tensor(targets)),
          logits, _targets(targets))


def test_cross_entropy_with_several_pad_tokens_and_probabilities() -> None:
    logits = seeded([6, 4], 2)
    keep = ~np.isin(TARGETS, [0, 2])
    loss = nn.CrossEntropyLossConfig(pad_tokens=[0, 2]).init()
    _both(loss.forward, lambda x: F.cross_entropy(x[torch.tensor(keep)], torch.tensor(TARGETS[keep])),
          logits, _targets())
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    loss = nn.CrossEntropyLossConfig(logits=False).init()
    _both(loss.forward, lambda x: F.nll_loss(x.log(), torch.tensor(TARGETS)), probs.astype(np.float32), _targets())
    # Only pads: 0 / 0, as PyTorch.
    with np.errstate(invalid="ignore"):
        only_pads = nn.CrossEntropyLoss.new(pad_index=1).forward(Tensor[B, 2].from_data(logits[:2]),
                                                                 _targets([1, 1]))
    assert np.isnan(only_pads.into_scalar())


def test_cross_entropy_checks_shapes() -> None:
    loss = nn.CrossEntropyLoss.new()
    with pytest.raises(ValueError, match="targets"):
        loss.forward(Tensor[B, 2].zeros([3, 4]), _targets([0, 1]))
    with pytest.raises(ValueError, match="smoothing"):
        nn.CrossEntropyLossConfig(smoothing=1.5)


@pytest.mark.parametrize("reduction, torch_reduction", [(Reduction.Mean, "mean"), (Reduction.Auto, "mean"),
                                                        (Reduction.Sum, "sum")])
def test_mse_matches_torch(reduction, torch_reduction) -> None:
    pred, target = seeded([3, 4, 2], 3), seeded([3, 4, 2], 4)
    _both(lambda x: nn.MseLoss.new().forward(x, Tensor[B, 3].from_data(target), reduction),
          lambda x: F.mse_loss(x, t64(target), reduction=torch_reduction), pred)
    out = nn.MseLoss().forward_no_reduction(Tensor[B, 3].from_data(pred), Tensor[B, 3].from_data(target))
    assert_close(out.to_numpy(), (pred - target) ** 2)


@pytest.mark.parametrize("delta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("reduction, torch_reduction", [(Reduction.Mean, "mean"), (Reduction.Sum, "sum")])
def test_huber_matches_torch(delta, reduction, torch_reduction) -> None:
    pred, target = seeded([5, 6], 5, scale=2.0), seeded([5, 6], 6)
    loss = nn.HuberLossConfig(delta).init()
    _both(lambda x: loss.forward(x, Tensor[B, 2].from_data(target), reduction),
          lambda x: F.huber_loss(x, t64(target), delta=delta, reduction=torch_reduction), pred)


BIN = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]])


@pytest.mark.parametrize("logits", [True, False])
@pytest.mark.parametrize("weights", [None, [0.5, 2.0, 1.5]])
def test_binary_cross_entropy_matches_torch(logits, weights) -> None:
    raw = seeded([4, 3], 7, scale=2.0)
    pred = raw if logits else (1.0 / (1.0 + np.exp(-raw))).astype(np.float32)
    loss = nn.BinaryCrossEntropyLossConfig(weights=weights, logits=logits).init()
    w = None if weights is None else torch.tensor(weights, dtype=torch.float64)
    ref = F.binary_cross_entropy_with_logits if logits else F.binary_cross_entropy
    _both(lambda x: loss.forward(x, Tensor[B, 2, Int].from_data(BIN)),
          lambda x: ref(x, t64(BIN), weight=w), pred)


def test_binary_cross_entropy_rank_one_weights_and_smoothing() -> None:
    raw = seeded([5], 8, scale=2.0)
    targets = np.array([1, 0, 0, 1, 1])
    loss = nn.BinaryCrossEntropyLossConfig(weights=[3.0, 0.5], logits=True).init()
    per_sample = torch.tensor([0.5 if t else 3.0 for t in targets], dtype=torch.float64)
    _both(lambda x: loss.forward(x, Tensor[B, 1, Int].from_data(targets)),
          lambda x: F.binary_cross_entropy_with_logits(x, t64(targets), weight=per_sample), raw)
    smooth = nn.BinaryCrossEntropyLossConfig(smoothing=0.2, logits=True).init()
    soft = targets * 0.8 + 0.2 / 2
    _both(lambda x: smooth.forward(x, Tensor[B, 1, Int].from_data(targets)),
          lambda x: F.binary_cross_entropy_with_logits(x, t64(soft)), raw)
    # Float targets (soft labels) work too, and the loss runs after valid().
    plain = loss.valid().forward(Tensor[NdArray, 1].from_data(raw), Tensor[NdArray, 1, Int].from_data(targets))
    assert plain.dims() == [1]


def test_probability_bce_stays_finite_at_zero_and_one() -> None:
    loss = nn.BinaryCrossEntropyLossConfig().init()
    p = Tensor[B, 1].from_floats([0.0, 1.0])
    with np.errstate(divide="ignore"):
        value = loss.forward(p, Tensor[B, 1, Int].from_ints([1, 0])).into_scalar()
    assert value == pytest.approx(100.0)


def test_cross_entropy_after_valid_accepts_targets_of_the_training_backend() -> None:
    loss = nn.CrossEntropyLossConfig(weights=[1.0, 2.0, 1.0, 1.0]).init().valid()
    logits = seeded([6, 4], 9)
    value = loss.forward(Tensor[NdArray, 2].from_data(logits), _targets()).into_scalar()
    ref = F.cross_entropy(t64(logits), torch.tensor(TARGETS), weight=torch.tensor([1.0, 2.0, 1.0, 1.0],
                                                                                  dtype=torch.float64))
    assert value == pytest.approx(ref.item(), rel=1e-5)
