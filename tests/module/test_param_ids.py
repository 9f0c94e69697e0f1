"""Parameter ids are unique within a module: `clone()` ties (Burn's shared
node, gradients summed), loading one record into two layers gives them their
own ids, and two different parameters with one id are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.module import DuplicateParamIdError, Module, Param
from burnbook.nn import Linear, LinearConfig
from burnbook.optim import GradientsParams, SgdConfig
from burnbook.record import Record, RecordError

B = Autodiff[NdArray]
X = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


class Two(Module):
    a: Linear
    b: Linear

    def forward(self, x):
        return self.b(self.a(x).tanh())


def layer(seed: int) -> Linear:
    B.seed(seed)
    return LinearConfig(3, 3).init(backend=B)


def sgd_step(model: Two, lr: float = 0.1) -> tuple[Two, GradientsParams]:
    loss = model(Tensor[B, 2].from_data(X)).powf_scalar(2.0).sum()
    grads = GradientsParams.from_grads(loss.backward(), model)
    return SgdConfig().init().step(lr, model, grads), grads


def torch_linear(torch, source: Linear):
    lin = torch.nn.Linear(3, 3)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(source.weight.val().to_numpy().T.copy()))
        lin.bias.copy_(torch.from_numpy(source.bias.val().to_numpy().copy()))
    return lin


def torch_step(torch, a, b, lr: float = 0.1) -> None:
    params = list(dict.fromkeys([*a.parameters(), *b.parameters()]))  # a tied layer once, as torch does
    opt = torch.optim.SGD(params, lr=lr)
    (b(torch.tanh(a(torch.from_numpy(X)))) ** 2).sum().backward()
    opt.step()


def assert_linear(ours: Linear, theirs) -> None:
    np.testing.assert_allclose(ours.weight.val().to_numpy(), theirs.weight.detach().numpy().T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.bias.val().to_numpy(), theirs.bias.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_clone_ties_the_weights_and_sums_their_gradients():
    torch = pytest.importorskip("torch")
    l = layer(0)
    model = Two(a=l, b=l.clone())
    assert model.a.weight is model.b.weight and model.a.weight.id == l.weight.id
    assert model.num_params() == 12  # one tied layer, counted once as in PyTorch
    new, grads = sgd_step(model)
    assert len(grads) == 2
    # The same torch Linear used twice: its gradient is the sum over both uses.
    tied = torch_linear(torch, l)
    torch_step(torch, tied, tied)
    assert new.a.weight is new.b.weight and new.a.weight.id == l.weight.id
    assert_linear(new.a, tied)
    # Tying survives every mapping of the module.
    for other in (new.clone(), new.valid(), new.no_grad(), new.fork(B.default_device())):
        assert other.a.weight is other.b.weight


def test_tied_gradient_is_the_sum_of_both_uses_by_hand():
    """d/dW sum(x W W) = x^T 1 W^T + (x W)^T 1: one term per use."""
    w = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32)
    x = np.array([[1.0, -2.0]], np.float32)

    class Chain(Module):
        first: Linear
        second: Linear

        def forward(self, x):
            return self.second(self.first(x))

    lin = Linear(weight=Param(Tensor[B, 2].from_data(w)))
    model = Chain(first=lin, second=lin.clone())
    grads = GradientsParams.from_grads(model(Tensor[B, 2].from_data(x)).sum().backward(), model)
    ones = np.ones((1, 2), np.float32)
    expected = x.T @ ones @ w.T + (x @ w).T @ ones
    np.testing.assert_allclose(grads.get(lin.weight).to_numpy(), expected, rtol=1e-6)


def test_one_record_loaded_into_two_layers_gives_two_independent_layers():
    torch = pytest.importorskip("torch")
    source = layer(1)
    record = source.into_record()
    a = layer(2).load_record(record)
    b = layer(3).load_record(record)
    assert a.weight.id == b.weight.id == source.weight.id  # each load alone keeps the record's ids
    model = Two(a=a, b=b)
    assert model.a.weight.id == source.weight.id and model.b.weight.id != source.weight.id
    assert model.b.bias.id not in {model.a.weight.id, model.a.bias.id}
    assert a.weight.id == source.weight.id and b.weight.id == source.weight.id  # the parts are left alone
    new, grads = sgd_step(model)
    assert len(grads) == 4
    ta, tb = torch_linear(torch, source), torch_linear(torch, source)
    torch_step(torch, ta, tb)
    assert_linear(new.a, ta)
    assert_linear(new.b, tb)


def test_one_record_entry_at_two_paths_loads_with_fresh_ids():
    torch = pytest.importorskip("torch")
    source = layer(1)
    rec = source.into_record()
    model = Two(a=layer(2), b=layer(3)).load_record(Record(a=rec, b=rec))
    ids = [p.id for _, p in model.named_params()]
    assert len(set(ids)) == 4 and ids[0] == source.weight.id
    np.testing.assert_array_equal(model.b.weight.val().to_numpy(), source.weight.val().to_numpy())
    new, _ = sgd_step(model)
    ta, tb = torch_linear(torch, source), torch_linear(torch, source)
    torch_step(torch, ta, tb)
    assert_linear(new.a, ta)
    assert_linear(new.b, tb)


def test_records_of_a_tied_module():
    l = layer(0)
    tied = Two(a=l, b=l)
    rec = tied.into_record()
    assert rec.a.weight.id == rec.b.weight.id
    target = layer(4)
    loaded = Two(a=target, b=target).load_record(rec)
    assert loaded.a.weight is loaded.b.weight and loaded.a.weight.id == l.weight.id
    # Into an untied module: two layers, the second with its own ids.
    untied = Two(a=layer(4), b=layer(5)).load_record(rec)
    assert untied.a.weight is not untied.b.weight and untied.a.weight.id != untied.b.weight.id
    # A tied module cannot hold two different values.
    other = Record(a=rec.a, b=layer(6).into_record())
    with pytest.raises(RecordError, match=r"b\.weight: tied to 'a\.weight'.*different values"):
        Two(a=target, b=target).load_record(other)


def test_a_frozen_copy_next_to_the_original_is_independent():
    l = layer(0)
    model = Two(a=l, b=l.no_grad())
    assert model.a.weight.id == l.weight.id and model.b.weight.id != l.weight.id
    new, grads = sgd_step(model)
    assert set(grads) == {l.weight.id, l.bias.id}
    np.testing.assert_array_equal(new.b.weight.val().to_numpy(), l.weight.val().to_numpy())
    assert not np.allclose(new.a.weight.val().to_numpy(), l.weight.val().to_numpy())


def test_two_parameters_with_one_id_are_refused_naming_both_paths():
    model = Two(a=layer(0), b=layer(1))
    same = model.a.weight.id
    # map_params does not renumber: it can build the duplicate the checks must catch.
    bad = model.map_params(lambda path, p: type(p)(p.val(), same, True) if path == "b.weight" else p)
    loss = bad(Tensor[B, 2].from_data(X)).sum()
    with pytest.raises(DuplicateParamIdError, match=r"from_grads: parameters 'a\.weight' and 'b\.weight'.*"
                                                    + same.value):
        GradientsParams.from_grads(loss.backward(), bad)
    grads = GradientsParams()
    grads.register(same, Tensor[NdArray, 2].zeros([3, 3]))
    with pytest.raises(DuplicateParamIdError, match=r"optim\.step: parameters 'a\.weight' and 'b\.weight'"):
        SgdConfig().init().step(0.1, bad, grads)
    assert isinstance(DuplicateParamIdError("x"), ValueError)
