"""Optimizers, gradients per parameter, and learning-rate schedulers (Burn's
`burn::optim`, `burn::grad_clipping` and `burn::lr_scheduler`).

    from burnbook.optim import AdamConfig, GradientsParams

    optim = AdamConfig().init()
    for batch in batches:
        loss = model.forward_loss(batch)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(1e-3, model, grads)     # returns the updated model

Update rules (`Sgd`, `Adam`, `AdamW`, `RmsProp`, `AdaGrad`) are pure
functions `(lr, tensor, grad, state) -> (tensor, state)` on the inner backend;
`OptimizerAdaptor` applies one to a whole module and keeps the states by
`ParamId`. Each file's docstring gives the rule and how it maps onto PyTorch.
"""

from .adagrad import AdaGrad, AdaGradConfig
from .adam import Adam, AdamConfig, AdamW, AdamWConfig
from .base import LearningRate, Optimizer, OptimizerAdaptor, SimpleOptimizer
from .decay import WeightDecay, WeightDecayConfig
from .grad_accum import GradientsAccumulator
from .grad_clipping import GradientClipping, GradientClippingConfig
from .grads import GradientsParams, MissingGradientsError, MissingGradientsWarning
from .momentum import Momentum, MomentumConfig
from .rmsprop import RmsProp, RmsPropConfig
from .sgd import Sgd, SgdConfig
from . import lr_scheduler
from .lr_scheduler import (
    ConstantLr, CosineAnnealingLrScheduler, CosineAnnealingLrSchedulerConfig, ExponentialLrScheduler,
    ExponentialLrSchedulerConfig, LinearLrScheduler, LinearLrSchedulerConfig, LrScheduler, NoamLrScheduler,
    NoamLrSchedulerConfig, StepLrScheduler, StepLrSchedulerConfig, as_lr_scheduler,
)

__all__ = [
    # gradients
    "GradientsParams", "MissingGradientsError", "MissingGradientsWarning", "GradientsAccumulator", "GradientClippingConfig", "GradientClipping",
    # optimizers
    "Optimizer", "SimpleOptimizer", "OptimizerAdaptor", "LearningRate",
    "SgdConfig", "Sgd", "MomentumConfig", "Momentum", "WeightDecayConfig", "WeightDecay",
    "AdamConfig", "Adam", "AdamWConfig", "AdamW", "RmsPropConfig", "RmsProp", "AdaGradConfig", "AdaGrad",
    # learning-rate schedulers
    "lr_scheduler", "LrScheduler", "ConstantLr", "as_lr_scheduler",
    "LinearLrSchedulerConfig", "LinearLrScheduler", "ExponentialLrSchedulerConfig", "ExponentialLrScheduler",
    "StepLrSchedulerConfig", "StepLrScheduler", "CosineAnnealingLrSchedulerConfig", "CosineAnnealingLrScheduler",
    "NoamLrSchedulerConfig", "NoamLrScheduler",
]
