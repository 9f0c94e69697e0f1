"""Chapter 09's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

from burnbook import Distribution, Tensor, nn
from burnbook.backend import Autodiff, NdArray
from burnbook.book import exercises
from burnbook.module import Module
from burnbook.optim import GradientsParams, SgdConfig

ex = exercises("09")
B = Autodiff[NdArray]
device = B.default_device()


class Mlp(Module):
    hidden: nn.Linear
    output: nn.Linear
    activation: nn.Relu

    def forward(self, x):
        return self.output(self.activation(self.hidden(x)))


class NoActivation(Mlp):
    def forward(self, x):
        return self.output(self.hidden(x))


class Residual(Module):
    inner: Mlp

    def forward(self, x):
        return x + self.inner(x)


class NoSkip(Residual):
    def forward(self, x):
        return self.inner(x)


def mlp(d_in, d_hidden, d_out, cls=Mlp):
    return cls(hidden=nn.LinearConfig(d_in, d_hidden).init(device),
               output=nn.LinearConfig(d_hidden, d_out).init(device), activation=nn.Relu())


def test_count_the_parameters():
    assert ex[1].verdict((4 * 3 + 3, 4 * 3)).ok
    assert "with bias=False is off" in ex[1].verdict((15, 15)).message
    assert "with a bias is off" in ex[1].verdict((12, 12)).message  # forgot the bias
    assert "pair" in ex[1].verdict(15).message


def test_a_smaller_kernel():
    assert ex[2].verdict(([2, 6, 14, 14], 6 * 3 * 3 * 3 + 6)).ok
    assert "5 x 5 kernel's" in ex[2].verdict(([2, 6, 12, 12], 168)).message
    assert "trims kernel - 1" in ex[2].verdict(([2, 6, 13, 13], 168)).message
    assert "not the biases" in ex[2].verdict(([2, 6, 14, 14], 162)).message
    assert "parameter count is off" in ex[2].verdict(([2, 6, 14, 14], 6 * 9 + 6)).message  # forgot c_in


def test_a_two_layer_perceptron():
    assert ex[3].verdict(mlp(4, 8, 2)).ok
    assert "skips the activation" in ex[3].verdict(mlp(4, 8, 2, NoActivation)).message
    assert "a 4 -> 8 -> 2 network's has [4, 8]" in ex[3].verdict(mlp(4, 16, 2)).message
    assert "named" in ex[3].verdict(nn.LinearConfig(4, 2).init(device)).message
    assert "the module itself" in ex[3].verdict(Mlp).message  # the class, not an instance


def _train(block, steps=20, lr=0.1, keep=True):
    B.seed(1)
    x = Tensor[B, 2].random([32, 4], Distribution.Normal(0.0, 1.0), device)
    mse, optim, losses = nn.MseLoss(), SgdConfig().init(), []
    trained = block
    for _ in range(steps):
        loss = mse(trained(x), x * 2.0)
        losses.append(loss.into_scalar())
        stepped = optim.step(lr, trained, GradientsParams.from_grads(loss.backward(), trained))
        trained = stepped if keep else trained
    return trained, losses


def test_a_residual_block_that_learns():
    assert ex[4].verdict(_train(Residual(inner=mlp(4, 16, 4)))).ok
    assert "update the block" in ex[4].verdict(_train(Residual(inner=mlp(4, 16, 4)), keep=False)).message
    assert "without adding its input" in ex[4].verdict(_train(NoSkip(inner=mlp(4, 16, 4)))).message
    assert "20 steps" in ex[4].verdict(_train(Residual(inner=mlp(4, 16, 4)), steps=10)).message
    assert "4 -> 16 -> 4" in ex[4].verdict(_train(Residual(inner=mlp(4, 8, 4)))).message
