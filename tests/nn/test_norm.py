"""BatchNorm, LayerNorm and GroupNorm against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.backend import NdArray

from .helpers import B, assert_close, assert_match, run_burn, run_torch, seeded, set_param

torch = pytest.importorskip("torch")


def _affine(burn_layer, ref, gamma: str = "gamma", beta: str = "beta") -> dict:
    """Random gamma/beta in both, and the param_map for their gradients."""
    n = burn_layer.gamma.val().dims()[0]
    g, b = seeded([n], 21) + 1.0, seeded([n], 22)
    burn_layer.gamma = burn_layer.gamma.with_value(Tensor[B, 1].from_data(g))
    burn_layer.beta = burn_layer.beta.with_value(Tensor[B, 1].from_data(b))
    set_param(ref.weight, g)
    set_param(ref.bias, b)
    return {gamma: lambda: ref.weight.grad.numpy(), beta: lambda: ref.bias.grad.numpy()}


@pytest.mark.parametrize("shape", [[6], [4, 6], [3, 5, 7], [2, 3, 4, 5]])
def test_layer_norm_matches_torch(shape: list[int]) -> None:
    d = shape[-1]
    layer = nn.LayerNormConfig(d).init()
    ref = torch.nn.LayerNorm(d, eps=1e-5).double()
    params = _affine(layer, ref)
    x = seeded(shape, 3, scale=2.0) + 0.5
    assert_match(run_burn(layer, lambda m, x: m.forward(x), x), run_torch(ref, x), params)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [[6], [4, 6], [2, 3, 6]])
def test_layer_norm_ndarray_op_matches_torch(shape: list[int], dtype) -> None:
    """NdArray's own layer_norm (in-place NumPy; f16 takes the default's
    primitives) against torch, in the input's dtype."""
    g, b = seeded([6], 21) + 1.0, seeded([6], 22)
    x = seeded(shape, 3, scale=2.0) + 0.5
    layer = nn.LayerNormConfig(6).init(backend=NdArray)
    layer.gamma = layer.gamma.with_value(Tensor[NdArray, 1].from_data(g).cast(dtype))
    layer.beta = layer.beta.with_value(Tensor[NdArray, 1].from_data(b).cast(dtype))
    got = layer.forward(Tensor[NdArray, len(shape)].from_data(x).cast(dtype))
    assert got.to_numpy().dtype == dtype
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    want = torch.nn.functional.layer_norm(t(x), [6], t(g), t(b), 1e-5).numpy()
    tol = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 1e-2}[dtype]
    np.testing.assert_allclose(got.to_numpy(), want, rtol=tol, atol=tol)


def test_layer_norm_default_op_follows_the_protocol() -> None:
    """`ModuleOps.layer_norm` (what Autodiff and Taichi run) on
    Autodiff[Strict]: only protocol calls; output and input gradient vs torch."""
    from burnbook.autodiff import Autodiff

    from ..autodiff.strict import Strict

    AS = Autodiff[Strict]
    layer = nn.LayerNormConfig(5).init(backend=AS)
    x = seeded([3, 2, 5], 8)
    xt = Tensor[AS, 3].from_data(x).require_grad()
    r = seeded([3, 2, 5], 9)  # a random weighting: sum(out^2) would have a ~0 gradient
    out = layer.forward(xt)
    grads = out.mul(Tensor[AS, 3].from_data(r)).sum().backward()
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ref = torch.nn.functional.layer_norm(tx, [5], eps=1e-5)
    (ref * torch.tensor(r, dtype=torch.float64)).sum().backward()
    assert np.abs(tx.grad.numpy()).max() > 0.1
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xt.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_layer_norm_names_a_wrong_last_dim() -> None:
    layer = nn.LayerNormConfig(6).init(backend=NdArray)
    with pytest.raises(ValueError, match=r"x \[3, 5\] has 5 features in its last dim, but gamma is \[6\]"):
        layer.forward(Tensor[NdArray, 2].zeros([3, 5]))


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [[2, 6, 5], [3, 6, 2, 4]])
def test_group_norm_matches_torch(shape: list[int], affine: bool) -> None:
    layer = nn.GroupNormConfig(3, 6, affine=affine).init()
    ref = torch.nn.GroupNorm(3, 6, eps=1e-5, affine=affine).double()
    params = _affine(layer, ref) if affine else {}
    x = seeded(shape, 4, scale=1.5)
    assert_match(run_burn(layer, lambda m, x: m.forward(x), x), run_torch(ref, x), params)


def test_group_norm_checks_channels() -> None:
    with pytest.raises(ValueError, match="multiple"):
        nn.GroupNormConfig(4, 6)
    with pytest.raises(ValueError, match=r"\[batch, 6"):
        nn.GroupNormConfig(3, 6).init().forward(Tensor[B, 3].zeros([2, 5, 4]))


@pytest.mark.parametrize("shape, ref_cls", [([8, 3], torch.nn.BatchNorm1d), ([4, 3, 5], torch.nn.BatchNorm1d),
                                            ([2, 3, 4, 5], torch.nn.BatchNorm2d)])
def test_batch_norm_training_output_and_grads_match_torch(shape, ref_cls) -> None:
    layer = nn.BatchNormConfig(3).init()
    ref = ref_cls(3, eps=1e-5, momentum=0.1).double().train()
    params = _affine(layer, ref)
    x = seeded(shape, 5, scale=2.0) + 1.0
    assert_match(run_burn(layer, lambda m, x: m.forward(x), x), run_torch(ref, x), params)
    # Running statistics are updated by that one step, as PyTorch's.
    assert_close(layer.running_mean.val().to_numpy(), ref.running_mean.numpy(), "running_mean")
    assert_close(layer.running_var.val().to_numpy(), ref.running_var.numpy(), "running_var")


def test_batch_norm_running_stats_over_steps_then_eval() -> None:
    layer = nn.BatchNormConfig(4, momentum=0.3).init()
    ref = torch.nn.BatchNorm2d(4, eps=1e-5, momentum=0.3).double().train()
    for step in range(5):
        x = seeded([3, 4, 2, 2], 100 + step, scale=step + 1.0) + step
        layer.forward(Tensor[B, 4].from_data(x))
        ref(torch.tensor(x, dtype=torch.float64))
        assert_close(layer.running_mean.val().to_numpy(), ref.running_mean.numpy(), f"mean, step {step}")
        assert_close(layer.running_var.val().to_numpy(), ref.running_var.numpy(), f"var, step {step}")
    # The running stats are recorded, but not trained.
    assert not layer.running_mean.is_require_grad() and layer.gamma.is_require_grad()
    assert set(dict(layer.named_params())) == {"gamma", "beta", "running_mean", "running_var"}
    # Eval: valid() gives the plain backend, which normalises with the running stats.
    model = layer.valid()
    ref.eval()
    x = seeded([2, 4, 3, 3], 7)
    out = model.forward(Tensor[NdArray, 4].from_data(x))
    assert_close(out.to_numpy(), ref(torch.tensor(x, dtype=torch.float64)).detach().numpy(), "eval output")
    before = model.running_mean.val().to_numpy().copy()
    model.forward(Tensor[NdArray, 4].from_data(x))
    np.testing.assert_array_equal(model.running_mean.val().to_numpy(), before)


def test_batch_norm_running_stats_survive_a_record_round_trip() -> None:
    layer = nn.BatchNormConfig(2).init()
    layer.forward(Tensor[B, 2].from_data(seeded([6, 2], 1) + 3.0))
    fresh = nn.BatchNormConfig(2).init_with(layer.into_record())
    np.testing.assert_array_equal(fresh.running_mean.val().to_numpy(), layer.running_mean.val().to_numpy())
    assert not fresh.running_var.is_require_grad()
