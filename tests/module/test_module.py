"""Module: declared fields, params, visitors/mappers, records and devices."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.backend import NdArray
from burnbook.module import Module, Param, ParamId
from burnbook.record import NamedMpkFileRecorder, PrettyJsonFileRecorder, RecordError

B = NdArray


class Affine(Module):
    weight: Param
    bias: Param
    scale: float = 1.0

    def forward(self, x):
        return x.matmul(self.weight.val()).add(self.bias.val().unsqueeze()).mul_scalar(self.scale)


class Stack(Module):
    first: Affine
    layers: list
    name: str = "stack"


def affine(d_in: int, d_out: int, backend=B, fill: float = 0.5) -> Affine:
    w = Tensor[backend, 2].full([d_in, d_out], fill)
    b = Tensor[backend, 1].from_floats(np.arange(d_out, dtype=np.float32))
    return Affine(weight=Param(w), bias=Param(b))


def model(backend=B) -> Stack:
    return Stack(first=affine(2, 3, backend), layers=[affine(3, 3, backend), affine(3, 1, backend)])


def test_fields_are_declared_by_annotation_in_order():
    assert Affine._fields == ("weight", "bias", "scale")
    a = affine(2, 3)
    assert a.scale == 1.0
    with pytest.raises(TypeError, match="missing field"):
        Affine(weight=a.weight)
    with pytest.raises(TypeError, match="no field 'wieght'"):
        Affine(wieght=a.weight, bias=a.bias)


def test_named_params_and_counts():
    m = model()
    assert [path for path, _ in m.named_params()] == [
        "first.weight", "first.bias", "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
    ]
    assert m.num_params() == (6 + 3) + (9 + 3) + (3 + 1)
    assert m.devices() == [B.default_device()]


def test_repr_shows_structure_and_param_counts():
    text = repr(model())
    assert text.startswith("Stack {")
    assert "first: Affine {params: 9}" in text
    assert "params: 25" in text


def test_visit_and_map_keep_ids():
    m = model()
    seen = []

    class Collect:
        def visit_float(self, id, tensor):
            seen.append((id, tensor.dims()))

    m.visit(Collect())
    assert [dims for _, dims in seen] == [[2, 3], [3], [3, 3], [3], [3, 1], [1]]

    class Double:
        def map_float(self, id, tensor):
            return tensor.mul_scalar(2.0)

    doubled = m.map(Double())
    assert [p.id for p in doubled.params()] == [p.id for p in m.params()]
    np.testing.assert_allclose(doubled.first.weight.val().to_numpy(), 1.0)
    np.testing.assert_allclose(m.first.weight.val().to_numpy(), 0.5)  # the original is untouched


def test_forward_through_declared_modules():
    m = model()
    x = Tensor[B, 2].ones([4, 2])
    y = m.first.forward(x)
    np.testing.assert_allclose(y.to_numpy(), np.tile([1.0, 2.0, 3.0], (4, 1)))


def test_record_round_trip_through_a_file(tmp_path):
    m = model()
    path = m.save_file(tmp_path / "model", NamedMpkFileRecorder())
    assert path.name == "model.mpk"
    fresh = Stack(first=affine(2, 3, fill=0.0), layers=[affine(3, 3, fill=0.0), affine(3, 1, fill=0.0)])
    loaded = fresh.load_file(tmp_path / "model", NamedMpkFileRecorder())
    for (path_a, a), (path_b, b) in zip(m.named_params(), loaded.named_params()):
        assert path_a == path_b and a.id == b.id
        np.testing.assert_array_equal(a.val().to_numpy(), b.val().to_numpy())


def test_record_is_nested_and_attribute_accessible():
    rec = model().into_record()
    assert rec.first.weight.shape == [2, 3]
    assert rec["layers"]["1"]["bias"].shape == [1]
    assert "name" not in rec and "scale" not in rec.first


def test_load_record_names_every_problem_at_once(tmp_path):
    rec = model().into_record()
    other = Stack(first=affine(2, 4), layers=[affine(3, 3)])
    with pytest.raises(RecordError) as err:
        other.load_record(rec)
    msg = str(err.value)
    assert "layers.1.weight" in msg and "layers.1.bias" in msg
    assert "first.weight: shape [2, 3] in the record, [2, 4] in the module" in msg


def test_load_checks_the_file(tmp_path):
    bad = tmp_path / "model.json"
    bad.write_text("{not json")
    with pytest.raises(RecordError):
        model().load_file(tmp_path / "model", PrettyJsonFileRecorder())


def test_param_ids_are_unique_and_stable():
    a, b = ParamId(), ParamId()
    assert a != b and ParamId(a.value) == a
    p = Param(Tensor[B, 1].zeros([2]))
    assert p.with_value(Tensor[B, 1].ones([2])).id == p.id


def test_clone_shares_values_but_not_structure():
    m = model()
    c = m.clone()
    assert c is not m and c.layers is not m.layers
    assert c.first.weight.val() is m.first.weight.val()


def test_fork_and_map_give_fresh_leaves():
    from burnbook.autodiff import Autodiff

    AD = Autodiff[NdArray]
    m = model(AD)

    class Double:
        def map_float(self, id, tensor):
            return tensor.mul_scalar(2.0)

    for copy in (m.map(Double()), m.fork(AD.default_device())):
        x = Tensor[AD, 2].ones([1, 2])
        grads = copy.first.forward(x).sum().backward()
        assert copy.first.weight.val().grad(grads) is not None
        # The original's leaves are not reached through the copy.
        assert m.first.weight.val().grad(grads) is None
