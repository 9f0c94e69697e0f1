"""Linear, Embedding, activations and Dropout against PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burnbook import Int, Tensor, nn
from burnbook.backend import NdArray

from .helpers import B, assert_close, assert_match, copy_linear, linear_grads, run_burn, run_torch, seeded

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [[5, 4], [2, 3, 4], [2, 2, 3, 4]])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(shape: list[int], bias: bool) -> None:
    B.seed(0)
    layer = nn.LinearConfig(4, 3, bias=bias).init(backend=B)
    ref = torch.nn.Linear(4, 3, bias=bias).double()
    copy_linear(layer, ref)
    x = seeded(shape, 1)
    ours = run_burn(layer, lambda m, x: m.forward(x), x)
    theirs = run_torch(ref, x)
    assert ours.out.shape == tuple(shape[:-1]) + (3,)
    assert_match(ours, theirs, linear_grads("", ref, bias))


def test_linear_default_init_bounds_and_layout() -> None:
    B.seed(3)
    layer = nn.LinearConfig(100, 7).init()
    w, b = layer.weight.val().to_numpy(), layer.bias.val().to_numpy()
    bound = 1.0 / math.sqrt(100)
    assert w.shape == (100, 7) and b.shape == (7,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.8 * bound  # spread over the whole range
    assert layer._fields == ("weight", "bias")
    assert layer.weight.val()._B is B and layer.weight.is_require_grad()
    assert repr(nn.LinearConfig(784, 10).init()) == "Linear {d_input: 784, d_output: 10, bias: true, params: 7850}"


def test_linear_is_reproducible_with_seed() -> None:
    B.seed(7)
    a = nn.LinearConfig(5, 5).init().weight.val().to_numpy()
    B.seed(7)
    b = nn.LinearConfig(5, 5).init().weight.val().to_numpy()
    np.testing.assert_array_equal(a, b)


def test_embedding_matches_torch() -> None:
    B.seed(0)
    emb = nn.EmbeddingConfig(6, 4).init()
    ids = np.array([[0, 2, 5], [2, 2, 1]])
    out = emb.forward(Tensor[B, 2, Int].from_data(ids))
    assert out.dims() == [2, 3, 4]
    r = seeded([2, 3, 4], 5)
    grads = out.mul(Tensor[B, 3].from_data(r)).sum().backward()

    ref = torch.nn.Embedding(6, 4).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(emb.weight.val().to_numpy(), dtype=torch.float64))
    ref_out = ref(torch.tensor(ids))
    (ref_out * torch.tensor(r, dtype=torch.float64)).sum().backward()
    assert_close(out.to_numpy(), ref_out.detach().numpy())
    assert_close(emb.weight.val().grad(grads).to_numpy(), ref.weight.grad.numpy())


def test_embedding_default_init_is_standard_normal() -> None:
    B.seed(1)
    w = nn.EmbeddingConfig(200, 50).init().weight.val().to_numpy()
    assert abs(w.mean()) < 0.05 and abs(w.std() - 1.0) < 0.05


ACTIVATIONS = [
    (nn.Relu(), torch.nn.ReLU()),
    (nn.Gelu(), torch.nn.GELU()),
    (nn.Sigmoid(), torch.nn.Sigmoid()),
    (nn.Tanh(), torch.nn.Tanh()),
    (nn.Silu(), torch.nn.SiLU()),
    (nn.Mish(), torch.nn.Mish()),
    (nn.Softplus(beta=2.0), torch.nn.Softplus(beta=2.0)),
    (nn.LeakyReluConfig(0.2).init(), torch.nn.LeakyReLU(0.2)),
]


@pytest.mark.parametrize("layer, ref", ACTIVATIONS, ids=lambda v: type(v).__name__)
def test_activations_match_torch(layer, ref) -> None:
    x = seeded([3, 5], 2, scale=3.0)
    x[np.abs(x) < 1e-3] = 0.5  # keep away from the kink of relu-like functions
    assert_match(run_burn(layer, lambda m, x: m.forward(x), x), run_torch(ref, x), {})


def test_activation_modules_have_no_params_and_print() -> None:
    assert nn.Relu.new().num_params() == 0
    assert nn.ReLU is nn.Relu and nn.GELU is nn.Gelu
    assert repr(nn.Relu()) == "Relu {params: 0}"
    assert repr(nn.LeakyRelu()) == "LeakyRelu {negative_slope: 0.01, params: 0}"


def test_prelu_matches_torch() -> None:
    layer = nn.PReluConfig(num_parameters=3, alpha=0.1).init()
    ref = torch.nn.PReLU(3, init=0.1).double()
    x = seeded([2, 3, 4], 4)
    assert_match(run_burn(layer, lambda m, x: m.forward(x), x), run_torch(ref, x),
                 {"alpha": lambda: ref.weight.grad.numpy()})


def test_dropout_trains_on_autodiff_and_is_identity_after_valid() -> None:
    drop = nn.DropoutConfig(0.25).init()
    x = Tensor[B, 2].ones([200, 100])
    B.seed(11)
    y = drop.forward(x).to_numpy()
    kept = y != 0
    assert 0.70 < kept.mean() < 0.80
    np.testing.assert_allclose(y[kept], 1.0 / 0.75, rtol=1e-6)
    # The mask is part of the graph: dropped values get no gradient.
    xr = Tensor[B, 2].ones([4, 50]).require_grad()
    B.seed(12)
    out = drop.forward(xr)
    g = out.sum().backward()
    np.testing.assert_allclose(xr.grad(g).to_numpy(), out.to_numpy(), rtol=1e-6)
    # Plain backend (what valid() gives): the identity.
    plain = Tensor[NdArray, 2].ones([3, 3])
    assert drop.valid().forward(plain) is plain
    assert drop.forward(plain) is plain
    assert nn.DropoutConfig(0.0).init().forward(x) is x


def test_dropout_config_checks_prob() -> None:
    with pytest.raises(ValueError, match="prob"):
        nn.DropoutConfig(1.5)
    assert repr(nn.DropoutConfig(0.5).init()) == "Dropout {prob: 0.5, params: 0}"


def test_backend_defaults_to_autodiff_over_the_device_backend() -> None:
    device = NdArray.default_device()
    assert nn.LinearConfig(2, 3).init().weight.val()._B is B
    assert nn.LinearConfig(2, 3).init(device).weight.val()._B is B
    plain = nn.LinearConfig(2, 3).init(device, backend=NdArray)
    assert plain.weight.val()._B is NdArray and not plain.weight.val().is_require_grad()
    assert plain.forward(Tensor[NdArray, 2].ones([4, 2])).dims() == [4, 3]
    with pytest.raises(TypeError, match="backend="):
        nn.LinearConfig(2, 3).init("gpu0")
