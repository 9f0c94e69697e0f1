"""`SwiGlu`: the gated feed-forward unit of Llama and PaLM (Shazeer 2020,
"GLU Variants Improve Transformer")."""

from __future__ import annotations

import math
from typing import Any

from burnbook.config import config
from burnbook.module import Module
from burnbook.tensor import Tensor, activation
from .common import check_config, resolve_backend, show
from .initializer import Initializer, KaimingUniform
from .linear import Linear, LinearConfig

__all__ = ["SwiGlu", "SwiGluConfig"]


@config
class SwiGluConfig:
    """Settings of a `SwiGlu`: two `d_input -> d_output` projections, without
    bias by default (as in Llama and Burn)."""

    d_input: int
    d_output: int
    bias: bool = False
    initializer: Initializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_input", "d_output"))

    def init(self, device: Any = None, backend: type | None = None) -> "SwiGlu":
        self.__post_init__()
        B = resolve_backend(device, backend)

        def linear() -> Linear:
            return LinearConfig(self.d_input, self.d_output, bias=self.bias,
                                initializer=self.initializer).init(device, B)

        return SwiGlu(linear_inner=linear(), linear_outer=linear())

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "SwiGlu":
        return self.init(device, backend).load_record(record)


class SwiGlu(Module):
    """`silu(linear_inner(x)) * linear_outer(x)` (Burn's `SwiGlu`): the
    first projection, through SiLU, gates the second element by element.
    A Llama feed-forward block is `down.forward(swiglu.forward(x))` with
    `swiglu = SwiGluConfig(d_model, d_ff).init(device)` and
    `down = LinearConfig(d_ff, d_model, bias=False).init(device)`.

        swiglu = nn.SwiGluConfig(64, 172).init(device)
        h = swiglu.forward(x)        # x [batch, seq, 64] -> h [batch, seq, 172]
    """

    linear_inner: Linear
    linear_outer: Linear

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[..., d_input]` -> `[..., d_output]`."""
        gate = activation.silu(self.linear_inner.forward(input))
        return gate.mul(self.linear_outer.forward(input))

    def extra_repr(self) -> dict:
        d_input, d_output = self.linear_inner.weight.val().dims()
        return {"d_input": d_input, "d_output": d_output, "bias": show(self.linear_inner.bias is not None)}
