"""A step without gradients is an error naming the likely cause; a step
where some trainable parameters got none warns with their paths."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.module import Module
from burnbook.nn import Linear, LinearConfig
from burnbook.optim import GradientsParams, MissingGradientsError, MissingGradientsWarning, SgdConfig
from .helpers import B, data, loss_of, make_mlp


def x_tensor():
    return Tensor[B, 2].from_data(data()[0])


def assert_no_gradient_error(err: pytest.ExceptionInfo) -> None:
    text = str(err.value)
    assert "none of the 4 trainable parameters of Mlp (l1.weight, l1.bias, l2.weight, l2.bias)" in text
    for cause in ("detached copy", "model.valid()", "tensor.inner()", "another model", "already taken"):
        assert cause in text, cause


def test_loss_of_a_detached_output_is_an_error():
    model = make_mlp()
    grads = model(x_tensor()).detach().require_grad().sum().backward()
    with pytest.raises(MissingGradientsError) as err:
        GradientsParams.from_grads(grads, model)
    assert_no_gradient_error(err)
    assert isinstance(err.value, ValueError)


def test_loss_through_the_inner_backend_is_an_error():
    model = make_mlp()
    hidden = model.l1(x_tensor()).tanh()
    # Leaving autodiff and coming back cuts the graph: l2 is tracked, l1 is not.
    back = Tensor[B, 2].from_data(hidden.inner().to_data())
    with pytest.warns(MissingGradientsWarning, match=r"2 trainable parameter\(s\) of Mlp .*: l1\.weight, l1\.bias"):
        grads = GradientsParams.from_grads(model.l2(back).sum().backward(), model)
    assert set(grads) == {model.l2.weight.id, model.l2.bias.id}
    # Everything through a copy rebuilt from data: nothing reaches the model.
    copy = Tensor[B, 2].from_data(model(x_tensor()).inner().to_data()).require_grad()
    with pytest.raises(MissingGradientsError) as err:
        GradientsParams.from_grads(copy.sum().backward(), model)
    assert_no_gradient_error(err)


def test_gradients_of_another_model_or_taken_twice_are_an_error():
    model = make_mlp()
    replica = model.fork(B.default_device())  # the same ids, other tensors
    with pytest.raises(MissingGradientsError):
        GradientsParams.from_grads(loss_of(replica, *data()).backward(), model)
    grads = loss_of(model, *data()).backward()
    assert len(GradientsParams.from_grads(grads, model)) == 4
    with pytest.raises(MissingGradientsError, match="already taken by an earlier from_grads"):
        GradientsParams.from_grads(grads, model)


def test_valid_model_is_a_type_error_naming_valid():
    model = make_mlp()
    grads = loss_of(model, *data()).backward()
    with pytest.raises(TypeError, match=r"no autodiff.*model\.valid\(\)"):
        GradientsParams.from_grads(grads, model.valid())


class Partly(Module):
    used: Linear
    unused: Linear
    frozen: Linear

    def forward(self, x):
        return self.used(x) + self.frozen(x)


def test_frozen_parameters_are_expected_and_not_listed():
    B.seed(0)
    model = Partly(used=LinearConfig(4, 2).init(backend=B), unused=LinearConfig(4, 2).init(backend=B),
                   frozen=LinearConfig(4, 2).init(backend=B).no_grad())
    with pytest.warns(MissingGradientsWarning) as record:
        grads = GradientsParams.from_grads(model(x_tensor()).sum().backward(), model)
    message = str(record[0].message)
    assert "2 trainable parameter(s)" in message and "unused.weight, unused.bias" in message
    assert "frozen.weight" not in message
    assert set(grads) == {model.used.weight.id, model.used.bias.id}
    # Freezing the unused layer silences the warning: nothing is missing any more.
    quiet = Partly(used=model.used, unused=model.unused.no_grad(), frozen=model.frozen)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GradientsParams.from_grads(quiet(x_tensor()).sum().backward(), quiet)
    # An entirely frozen model has nothing to train and nothing missing.
    still = model.no_grad()
    assert len(GradientsParams.from_grads(still(x_tensor()).require_grad().sum().backward(), still)) == 0


def test_from_params_checks_the_selection_only():
    model = make_mlp()
    grads = model.l2(model.l1(x_tensor()).detach()).sum().backward()
    selected = GradientsParams.from_params(grads, model, [model.l2.weight, model.l2.bias])
    assert len(selected) == 2
    grads = model.l2(model.l1(x_tensor()).detach()).sum().backward()
    with pytest.raises(MissingGradientsError, match=r"none of the 2 trainable parameters of Mlp \(l1\.weight"):
        GradientsParams.from_params(grads, model, [model.l1.weight, model.l1.bias])


def test_a_step_after_the_warning_moves_only_the_parameters_with_gradients():
    model = make_mlp()
    back = Tensor[B, 2].from_data(model.l1(x_tensor()).inner().to_data())
    with pytest.warns(MissingGradientsWarning):
        grads = GradientsParams.from_grads(model.l2(back).sum().backward(), model)
    new = SgdConfig().init().step(0.1, model, grads)
    np.testing.assert_array_equal(new.l1.weight.val().to_numpy(), model.l1.weight.val().to_numpy())
    assert not np.allclose(new.l2.weight.val().to_numpy(), model.l2.weight.val().to_numpy())
