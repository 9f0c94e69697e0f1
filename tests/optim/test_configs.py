"""Optimizer configs: Burn's defaults, JSON round trips (clipping saved as a
tagged variant) and refused settings."""

from __future__ import annotations

import pytest

from burnbook.config import ConfigError
from burnbook.optim import (
    AdaGradConfig, AdamConfig, AdamWConfig, GradientClipping, GradientClippingConfig, MomentumConfig,
    OptimizerAdaptor, RmsPropConfig, SgdConfig, WeightDecayConfig,
)


def test_burn_defaults() -> None:
    assert (MomentumConfig().momentum, MomentumConfig().dampening, MomentumConfig().nesterov) == (0.9, 0.1, False)
    adam = AdamConfig()
    assert (adam.beta_1, adam.beta_2, adam.epsilon, adam.weight_decay, adam.grad_clipping) == (
        0.9, 0.999, 1e-5, None, None)
    assert AdamWConfig().weight_decay == 1e-4
    rms = RmsPropConfig()
    assert (rms.alpha, rms.momentum, rms.epsilon, rms.centered) == (0.99, 0.9, 1e-5, False)
    assert (AdaGradConfig().lr_decay, AdaGradConfig().epsilon) == (0.0, 1e-5)
    sgd = SgdConfig()
    assert (sgd.weight_decay, sgd.momentum, sgd.gradient_clipping) == (None, None, None)


def test_init_gives_an_optimizer_with_its_clipping() -> None:
    optim = SgdConfig(gradient_clipping=GradientClippingConfig.Value(0.5)).init()
    assert isinstance(optim, OptimizerAdaptor)
    assert optim.grad_clipping == GradientClipping.Value(0.5)
    assert AdamConfig().with_grad_clipping(GradientClippingConfig.Norm(1.0)).init().grad_clipping == \
        GradientClipping.Norm(1.0)
    assert "Adam(" in repr(AdamConfig().init())


@pytest.mark.parametrize("config", [
    SgdConfig(WeightDecayConfig(1e-3), MomentumConfig(nesterov=True), GradientClippingConfig.Norm(2.0)),
    AdamConfig(grad_clipping=GradientClippingConfig.Value(0.1), weight_decay=WeightDecayConfig(0.01)),
    AdamWConfig(weight_decay=0.05),
    RmsPropConfig(centered=True, grad_clipping=GradientClippingConfig.Norm(1.0)),
    AdaGradConfig(lr_decay=0.1),
], ids=lambda c: type(c).__name__)
def test_json_round_trip(config, tmp_path) -> None:
    path = config.save(tmp_path / "optim.json")
    assert type(config).load(path) == config


def test_clipping_is_saved_as_a_tagged_variant() -> None:
    text = SgdConfig(gradient_clipping=GradientClippingConfig.Norm(2.0)).to_json()
    assert '"Norm": {' in text and '"max_norm": 2.0' in text
    with pytest.raises(ConfigError, match="unknown key"):
        SgdConfig.from_json('{"gradient_clipping": {"Norm": {"threshold": 1.0}}}')


@pytest.mark.parametrize("build, message", [
    (lambda: AdamConfig(beta_1=1.0), "beta_1 must be in"),
    (lambda: AdamWConfig(weight_decay=-1.0), "weight_decay must be >= 0"),
    (lambda: RmsPropConfig(alpha=2.0), "alpha must be in"),
    (lambda: AdaGradConfig(epsilon=-1.0), "must be >= 0"),
    (lambda: WeightDecayConfig(-0.1), "penalty must be >= 0"),
    (lambda: GradientClippingConfig.Value(0.0), "threshold must be > 0"),
    (lambda: GradientClippingConfig.Norm(-1.0), "max_norm must be > 0"),
    (lambda: GradientClippingConfig().init(), "use GradientClippingConfig.Value"),
])
def test_refused_settings(build, message) -> None:
    with pytest.raises((ValueError, NotImplementedError), match=message):
        build()
