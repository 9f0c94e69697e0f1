"""Sub-modules assigned the PyTorch way (`self.l1 = ...` in `__init__`, no
annotation) are fields: counted, recorded, visited, mapped and trained, and a
step on them matches PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.module import Module, Param
from burnbook.nn import Linear, LinearConfig
from burnbook.optim import GradientsParams, SgdConfig
from burnbook.record import BinBytesRecorder

B = Autodiff[NdArray]


class TorchStyle(Module):
    """No annotations: every layer is assigned in `__init__`, as in PyTorch."""

    def __init__(self, d_in: int = 4, d_hidden: int = 3):
        super().__init__()
        self.l1 = LinearConfig(d_in, d_hidden).init(backend=B)
        self.scale = Param(Tensor[B, 1].full([d_hidden], 2.0))
        self.blocks = [LinearConfig(d_hidden, d_hidden).init(backend=B) for _ in range(2)]
        self.d_in = d_in  # a plain setting: kept, not a field

    def forward(self, x):
        h = self.l1(x).mul(self.scale.val().unsqueeze())
        for block in self.blocks:
            h = block(h).tanh()
        return h


class Mixed(Module):
    """An annotated field plus one assigned in a hand-written `__init__`."""

    head: Linear

    def __init__(self):
        self.head = LinearConfig(3, 1).init(backend=B)
        self.body = LinearConfig(2, 3).init(backend=B)

    def forward(self, x):
        return self.head(self.body(x))


def test_assigned_layers_are_fields_in_assignment_order():
    m = TorchStyle()
    assert m._fields == ("l1", "scale", "blocks")
    assert [p for p, _ in m.named_params()] == [
        "l1.weight", "l1.bias", "scale", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"]
    assert m.num_params() == (4 * 3 + 3) + 3 + 2 * (3 * 3 + 3)
    assert m.d_in == 4 and "d_in" not in m._fields
    assert Mixed()._fields == ("head", "body")  # annotated first, then assigned
    assert "blocks: [Linear" in repr(m)
    assert type(m)._fields == ()  # registered per instance, the class is untouched


def test_registered_layers_follow_every_module_operation():
    m = TorchStyle()
    assert m.devices() == [B.default_device()]
    seen = []

    class Collect:
        def visit_float(self, id, tensor):  # noqa: A002
            seen.append(tensor.dims())

    m.visit(Collect())
    assert seen == [[4, 3], [3], [3], [3, 3], [3], [3, 3], [3]]
    for other in (m.valid(), m.no_grad(), m.clone(), m.fork(B.default_device())):
        assert [p for p, _ in other.named_params()] == [p for p, _ in m.named_params()]
    assert m.valid().l1.weight.val()._B is NdArray
    assert not m.no_grad().blocks[1].bias.is_require_grad()


def test_registered_layers_round_trip_through_records():
    m = TorchStyle()
    rec = m.into_record()
    assert set(rec.flatten()) == {p for p, _ in m.named_params()}
    data = BinBytesRecorder().to_bytes(rec)
    loaded = TorchStyle().load_record(BinBytesRecorder().from_bytes(data))
    for (path, p), (_, q) in zip(m.named_params(), loaded.named_params()):
        assert p.id == q.id, path
        np.testing.assert_array_equal(p.val().to_numpy(), q.val().to_numpy())


def test_one_sgd_step_on_registered_layers_matches_torch():
    torch = pytest.importorskip("torch")
    B.seed(4)
    m = TorchStyle()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)

    class Twin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(4, 3)
            self.scale = torch.nn.Parameter(torch.full((3,), 2.0))
            self.blocks = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(2)])

        def forward(self, x):
            h = self.l1(x) * self.scale
            for block in self.blocks:
                h = torch.tanh(block(h))
            return h

    twin = Twin()
    tparams = dict(twin.named_parameters())  # the same paths (torch lists own parameters first)
    assert set(tparams) == {path for path, _ in m.named_params()}
    with torch.no_grad():
        for path, p in m.named_params():
            a = p.val().to_numpy()
            tparams[path].copy_(torch.from_numpy((a.T if a.ndim == 2 else a).copy()))
    assert m.num_params() == sum(p.numel() for p in twin.parameters())

    grads = GradientsParams.from_grads(m(Tensor[B, 2].from_data(x)).powf_scalar(2.0).sum().backward(), m)
    assert len(grads) == 7
    new = SgdConfig().init().step(0.1, m, grads)
    opt = torch.optim.SGD(twin.parameters(), lr=0.1)
    (twin(torch.from_numpy(x)) ** 2).sum().backward()
    opt.step()
    for path, p in new.named_params():
        a = p.val().to_numpy()
        np.testing.assert_allclose(a.T if a.ndim == 2 else a, tparams[path].detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=path)


def test_assignments_that_would_lose_parameters_are_errors():
    class Private(Module):
        def __init__(self):
            self._layer = LinearConfig(2, 2).init()

    with pytest.raises(TypeError, match=r"Private\._layer: .*neither trained nor saved.*self\.layer"):
        Private()

    class Dict(Module):
        def __init__(self):
            self.layers = {"a": LinearConfig(2, 2).init()}

    with pytest.raises(TypeError, match=r"Dict\.layers: a dict of modules .*use a list"):
        Dict()

    class Cache(Module):  # private plain values are fine: caches, settings
        def __init__(self):
            self._mask = Tensor[NdArray, 1].zeros([2])
            self._calls = 0

    c = Cache()
    assert c._fields == () and c._calls == 0
