"""A two-layer module shared by the widget tests."""

from __future__ import annotations

from burnbook import nn
from burnbook.module import Module


class Tiny(Module):
    fc1: nn.Linear
    fc2: nn.Linear
    act: nn.Relu

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))
