"""Chapter 14's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

from burnbook import nn
from burnbook.book import exercises
from burnbook.config import ConfigError, config
from burnbook.module import Module
from burnbook.optim import AdamConfig

ex = exercises("14")


def test_int_or_float():
    assert ex[1].verdict(("float", TypeError, True)).ok
    assert ex[1].verdict(["float", "TypeError", True]).ok
    assert "not an int" in ex[1].verdict(("int", "TypeError", True)).message
    assert "does not pass" in ex[1].verdict(("float", "none", True)).message
    assert "not a ConfigError" in ex[1].verdict(("float", ConfigError, True)).message
    assert "compare by value" in ex[1].verdict(("float", "TypeError", False)).message


def test_new_field():
    assert ex[2].verdict(("relu", "gelu", ConfigError)).ok
    assert "default" in ex[2].verdict(("ConfigError", "gelu", "ConfigError")).message
    assert "not ignored" in ex[2].verdict(("relu", "gelu", "relu")).message
    assert "own error class" in ex[2].verdict(("relu", "gelu", "KeyError")).message


def training_config(check_batch=True, check_lr=True, strict=False):
    @config
    class MnistTrainingConfig:
        optimizer: AdamConfig
        num_epochs: int = 10
        batch_size: int = 64
        seed: int = 42
        lr: float = 1e-4

        def __post_init__(self):
            if check_batch and self.batch_size < (2 if strict else 1):
                raise ValueError(f"batch_size must be at least 1, got {self.batch_size}")
            if check_lr and not self.lr > 0:
                raise ValueError(f"lr must be positive, got {self.lr}")
    return MnistTrainingConfig


def test_refuse_a_bad_setting():
    assert ex[3].verdict(training_config()).ok
    assert "lr=0.0 is accepted" in ex[3].verdict(training_config(check_lr=False)).message
    assert "batch_size=0 is accepted" in ex[3].verdict(training_config(check_batch=False)).message
    assert "good setting" in ex[3].verdict(training_config(strict=True)).message


class Mlp(Module):
    linear1: nn.Linear
    activation: nn.Relu
    dropout: nn.Dropout
    linear2: nn.Linear

    def forward(self, x):
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class NoRelu(Mlp):
    def forward(self, x):
        return self.linear2(self.dropout(self.linear1(x)))


def mlp_config(module=Mlp, fresh_head=False):
    @config
    class MlpConfig:
        d_input: int
        d_hidden: int
        d_output: int
        dropout: float = 0.0

        def init(self, device=None):
            return module(linear1=nn.LinearConfig(self.d_input, self.d_hidden).init(device),
                          activation=nn.Relu(), dropout=nn.DropoutConfig(self.dropout).init(),
                          linear2=nn.LinearConfig(self.d_hidden, self.d_output).init(device))

        def init_with(self, record):
            head = nn.LinearConfig(self.d_hidden, self.d_output)
            return module(linear1=nn.LinearConfig(self.d_input, self.d_hidden).init_with(record.linear1),
                          activation=nn.Relu(), dropout=nn.DropoutConfig(self.dropout).init(),
                          linear2=head.init() if fresh_head else head.init_with(record.linear2))
    return MlpConfig


def test_mlp_config():
    assert ex[4].verdict(mlp_config()).ok
    assert "valid() mode" in ex[4].verdict(mlp_config(NoRelu)).message
    assert "every weight from the record" in ex[4].verdict(mlp_config(fresh_head=True)).message
