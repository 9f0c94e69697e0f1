"""GradientsParams, GradientsAccumulator, what a step leaves alone, and the
errors a learner meets."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.autodiff import Gradients
from burnbook.backend import NdArray
from burnbook.module import Module, Param, ParamId, RunningState
from burnbook.nn import BatchNorm, BatchNormConfig, Linear, LinearConfig
from burnbook.optim import (
    AdamConfig, GradientClipping, GradientsAccumulator, GradientsParams, MissingGradientsWarning, SgdConfig,
)
from .helpers import B, data, grads_of, loss_of, make_mlp, weights


def test_from_grads_keys_gradients_by_param_id() -> None:
    model = make_mlp()
    x, y = data()
    grads = loss_of(model, x, y).backward()
    expected = {p.id: p.val().grad(grads).to_numpy() for _, p in model.named_params()}
    gp = GradientsParams.from_grads(grads, model)
    assert len(gp) == gp.len() == 4 and not gp.is_empty()
    for pid, g in expected.items():
        assert pid in gp
        got = gp.get(pid)
        assert got._B is NdArray  # the inner backend: no graph kept
        np.testing.assert_array_equal(got.to_numpy(), g)
    assert len(grads) == 0  # popped out of the autodiff Gradients, as Burn's grad_remove


def test_get_remove_register_accept_ids_params_and_strings() -> None:
    model = make_mlp()
    gp = grads_of(model, *data())
    p = model.l1.weight
    assert gp.get(p) is gp.get(p.id) is gp.get(p.id.value)
    g = gp.remove(p)
    assert g is not None and gp.get(p) is None and gp.remove(p) is None and len(gp) == 3
    gp.register(p.id, g.mul_scalar(2.0))
    gp.register(p.id, g)  # replaces, never adds
    np.testing.assert_array_equal(gp.get(p).to_numpy(), g.to_numpy())
    with pytest.raises(TypeError, match="expected a Tensor"):
        gp.register(p.id, g.to_numpy())


def test_from_params_selects_parameters() -> None:
    model = make_mlp()
    grads = loss_of(model, *data()).backward()
    gp = GradientsParams.from_params(grads, model, [model.l2.weight.id, model.l2.bias])
    assert set(gp) == {model.l2.weight.id, model.l2.bias.id}


class Frozen(Module):
    used: Linear
    unused: Linear
    frozen: Linear
    norm: BatchNorm

    def forward(self, x):
        h = self.used(x) + self.frozen(x)
        return self.norm(h.unsqueeze_dim(2)).squeeze(2) + h


def _frozen_model() -> Frozen:
    B.seed(3)
    return Frozen(used=LinearConfig(4, 5).init(), unused=LinearConfig(4, 5).init(),
                  frozen=LinearConfig(4, 5).init().no_grad(), norm=BatchNormConfig(5).init())


def test_params_without_gradient_are_skipped_and_left_alone() -> None:
    model = _frozen_model()
    x = Tensor[B, 2].from_data(data()[0])
    loss = model(x).powf_scalar(2.0).mean()
    # The forward pass updated BatchNorm's running statistics (RunningState).
    running = model.norm.running_mean.val().to_numpy()
    assert not np.allclose(running, 0.0)
    with pytest.warns(MissingGradientsWarning, match=r"unused\.weight, unused\.bias"):
        gp = GradientsParams.from_grads(loss.backward(), model)
    ids = set(gp)
    assert ids == {model.used.weight.id, model.used.bias.id, model.norm.gamma.id, model.norm.beta.id}
    before = {path: p.val().to_numpy() for path, p in model.named_params()}
    new = SgdConfig().init().step(0.1, model, gp)
    after = {path: p.val().to_numpy() for path, p in new.named_params()}
    for path in before:
        changed = not np.array_equal(before[path], after[path])
        assert changed == path.startswith(("used.", "norm.gamma", "norm.beta")), path
    # Running statistics keep their values, class, id and (absent) tracking.
    assert isinstance(new.norm.running_mean, RunningState)
    assert new.norm.running_mean.id == model.norm.running_mean.id
    np.testing.assert_array_equal(new.norm.running_mean.val().to_numpy(), running)
    assert not new.norm.running_var.val().is_require_grad()
    assert not new.frozen.weight.val().is_require_grad()


def test_step_keeps_ids_and_tracking_and_the_original_model() -> None:
    model = make_mlp()
    old = weights(model)
    optim = AdamConfig().init()
    new = optim.step(0.01, model, grads_of(model, *data()))
    for (path, p), (_, q) in zip(model.named_params(), new.named_params()):
        assert p.id == q.id and type(p) is type(q)
        assert q.val().is_require_grad() and q.val()._B is B
    np.testing.assert_array_equal(weights(model)["l1.weight"], old["l1.weight"])  # a new module
    # The next forward pass tracks the new parameters and trains again.
    newer = optim.step(0.01, new, grads_of(new, *data()))
    assert not np.allclose(weights(newer)["l1.weight"], weights(new)["l1.weight"])
    assert len(optim) == 4


def test_update_rule_is_pure_and_builds_no_graph() -> None:
    rule = AdamConfig().init().optim
    t = Tensor[NdArray, 1].from_floats([1.0, -2.0, 3.0])
    g = Tensor[NdArray, 1].from_floats([0.5, 0.5, -1.0])
    t1, s1 = rule.step(0.1, t, g, None)
    t2, s2 = rule.step(0.1, t1, g, s1)
    assert s1["time"] == 1 and s2["time"] == 2
    assert t1._B is NdArray and t.to_numpy().tolist() == [1.0, -2.0, 3.0]
    again, s2b = rule.step(0.1, t1, g, s1)  # the same inputs give the same outputs
    np.testing.assert_array_equal(again.to_numpy(), t2.to_numpy())
    np.testing.assert_array_equal(s2b["moment_2"].to_numpy(), s2["moment_2"].to_numpy())


def test_accumulated_micro_batches_equal_one_big_batch() -> None:
    x, y = data(seed=5, batch=8)
    model = make_mlp()
    acc = GradientsAccumulator()
    for part in (slice(0, 3), slice(3, 8)):
        # The full batch's mean loss is the sum of these per-part terms.
        diff = model(Tensor[B, 2].from_data(x[part])).sub(Tensor[B, 2].from_data(y[part]))
        loss = diff.mul(diff).sum().div_scalar(x.size / 4 * 3)
        acc.accumulate(model, GradientsParams.from_grads(loss.backward(), model))
    assert len(acc) == 4
    summed = acc.grads()
    assert len(acc) == 0 and len(acc.grads()) == 0  # grads() resets
    whole = grads_of(model, x, y)
    for pid, g in whole.items():
        np.testing.assert_allclose(summed.get(pid).to_numpy(), g.to_numpy(), rtol=1e-5, atol=1e-6)
    a = SgdConfig().init().step(0.1, model, summed)
    b = SgdConfig().init().step(0.1, model, whole)
    for name, w in weights(a).items():
        np.testing.assert_allclose(w, weights(b)[name], rtol=1e-5, atol=1e-6)


def test_accumulator_drops_gradients_of_other_modules() -> None:
    model, other = make_mlp(0), make_mlp(1)
    acc = GradientsAccumulator()
    acc.accumulate(model, grads_of(other, *data()))
    assert len(acc.grads()) == 0


def test_clipping_rules() -> None:
    g = Tensor[NdArray, 1].from_floats([3.0, -4.0, 0.5])
    assert GradientClipping.Value(1.0).clip_gradient(g).to_numpy().tolist() == [1.0, -1.0, 0.5]
    norm = np.linalg.norm([3.0, -4.0, 0.5])
    np.testing.assert_allclose(GradientClipping.Norm(2.0).clip_gradient(g).to_numpy(),
                               np.array([3.0, -4.0, 0.5]) * 2.0 / norm, rtol=1e-6)
    assert GradientClipping.Norm(10.0).clip_gradient(g) is g  # below the limit: unchanged


# -- errors ------------------------------------------------------------------------------


def test_step_with_autodiff_gradients_says_to_convert() -> None:
    model = make_mlp()
    grads = loss_of(model, *data()).backward()
    assert isinstance(grads, Gradients)
    with pytest.raises(TypeError, match=r"GradientsParams.from_grads\(grads, model\)"):
        SgdConfig().init().step(0.1, model, grads)


def test_from_grads_errors() -> None:
    model = make_mlp()
    gp = grads_of(model, *data())
    with pytest.raises(TypeError, match="already a GradientsParams"):
        GradientsParams.from_grads(gp, model)
    grads = loss_of(model, *data()).backward()
    with pytest.raises(TypeError, match=r"no autodiff.*model.valid\(\)"):
        GradientsParams.from_grads(grads, model.valid())


def test_gradients_of_another_model_are_an_error() -> None:
    model, other = make_mlp(0), make_mlp(1)
    with pytest.raises(ValueError, match="none of the 4 gradients"):
        SgdConfig().init().step(0.1, model, grads_of(other, *data()))
    # Empty gradients are fine (nothing to do), and partly matching ones step
    # the matching parameters, as Burn does for a sub-module.
    same = SgdConfig().init().step(0.1, model, GradientsParams())
    np.testing.assert_array_equal(weights(same)["l1.weight"], weights(model)["l1.weight"])
    gp = grads_of(model, *data())
    layer = SgdConfig().init().step(0.1, model.l2, gp)
    assert not np.allclose(layer.weight.val().to_numpy(), model.l2.weight.val().to_numpy())


def test_learning_rate_and_shape_errors() -> None:
    model = make_mlp()
    gp = grads_of(model, *data())
    optim = SgdConfig().init()
    with pytest.raises(TypeError, match="must be a number"):
        optim.step("0.1", model, gp)
    with pytest.raises(ValueError, match="finite"):
        optim.step(float("nan"), model, gp)
    bad = GradientsParams()
    bad.register(model.l1.weight.id, Tensor[NdArray, 2].zeros([2, 2]))
    with pytest.raises(ValueError, match=r"'l1.weight' has shape \[2, 2\], the parameter \[4, 6\]"):
        optim.step(0.1, model, bad)


def test_plain_backend_module_can_be_stepped() -> None:
    """A module outside autodiff (gradients computed elsewhere) updates too."""

    class One(Module):
        w: Param

    m = One(w=Param(Tensor[NdArray, 1].from_floats([1.0, 2.0])))
    gp = GradientsParams()
    gp.register(m.w.id, Tensor[NdArray, 1].from_floats([1.0, 1.0]))
    out = SgdConfig().init().step(0.5, m, gp)
    assert out.w.val().to_numpy().tolist() == [0.5, 1.5] and out.w.id == m.w.id
    assert isinstance(m.w.id, ParamId)


def test_tied_parameter_is_updated_once_and_stays_tied() -> None:
    class Tied(Module):
        first: Linear
        second: Linear

        def forward(self, x):
            return self.second(self.first(x))

    B.seed(0)
    layer = LinearConfig(4, 4).init()
    model = Tied(first=layer, second=layer)
    x = Tensor[B, 2].from_data(data()[0])
    gp = GradientsParams.from_grads(model(x).sum().backward(), model)
    assert len(gp) == 2  # one gradient per parameter, summed over both uses
    new = SgdConfig().init().step(0.1, model, gp)
    assert new.first.weight is new.second.weight
    expected = layer.weight.val().to_numpy() - 0.1 * gp.get(layer.weight).to_numpy()
    np.testing.assert_allclose(new.first.weight.val().to_numpy(), expected, rtol=1e-6)
