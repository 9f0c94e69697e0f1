"""`Linear` and `Embedding`: the two dense lookup/projection layers."""

from __future__ import annotations

import math
from typing import Any

from burnbook.config import config
from burnbook.module import Module, Param
from burnbook.tensor import Tensor
from .common import check_config, resolve_backend, show
from .initializer import Initializer, KaimingUniform, Normal

__all__ = ["Linear", "LinearConfig", "Embedding", "EmbeddingConfig"]


@config
class LinearConfig:
    """Settings of a `Linear` layer; the default initializer draws weight
    and bias from U(-k, k), k = 1/sqrt(d_input), as PyTorch does."""

    d_input: int
    d_output: int
    bias: bool = True
    initializer: Initializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_input", "d_output"))

    def init(self, device: Any = None, backend: type | None = None) -> "Linear":
        """A new `Linear` on `device` (backend: see `nn.common`)."""
        self.__post_init__()
        B = resolve_backend(device, backend)
        fans = dict(fan_in=self.d_input, fan_out=self.d_output, backend=B)
        weight = self.initializer.init([self.d_input, self.d_output], device, **fans)
        bias = self.initializer.init([self.d_output], device, **fans) if self.bias else None
        return Linear(weight=weight, bias=bias)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "Linear":
        """A `Linear` holding the values (and ids) of `record`."""
        return self.init(device, backend).load_record(record)


class Linear(Module):
    """y = x W + b, with W of shape [d_input, d_output] (Burn's layout, the
    transpose of PyTorch's `nn.Linear.weight`)."""

    weight: Param
    bias: Param | None = None

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - Burn's name
        """`[..., d_input]` -> `[..., d_output]` (any rank >= 1)."""
        w = self.weight.val()
        dims = input.dims()
        d_input, d_output = w.dims()
        if dims[-1] != d_input:
            raise ValueError(f"Linear: the input's last dim is {dims[-1]}, the layer expects d_input={d_input}")
        # One 2-D matmul over every leading dim folded together: cheaper than a
        # broadcast batched matmul, and the same values.
        # The shapes come from the input's own dims: `_reshaped` skips the
        # checks `reshape` would repeat on every call.
        rows = 1
        for n in dims[:-1]:
            rows *= n
        x = input if input.ndim == 2 else input._reshaped([rows, d_input])
        out = x.matmul(w)
        if self.bias is not None:
            out = out + self.bias.val().unsqueeze()
        return out if input.ndim == 2 else out._reshaped(dims[:-1] + [d_output])

    def extra_repr(self) -> dict:
        d_input, d_output = self.weight.val().dims()
        return {"d_input": d_input, "d_output": d_output, "bias": show(self.bias is not None)}


@config
class EmbeddingConfig:
    """Settings of an `Embedding` table; values start N(0, 1) as in PyTorch."""

    n_embedding: int
    d_model: int
    initializer: Initializer = Normal(mean=0.0, std=1.0)

    def __post_init__(self) -> None:
        check_config(self, sizes=("n_embedding", "d_model"))

    def init(self, device: Any = None, backend: type | None = None) -> "Embedding":
        self.__post_init__()
        B = resolve_backend(device, backend)
        weight = self.initializer.init([self.n_embedding, self.d_model], device,
                                       fan_in=self.n_embedding, fan_out=self.d_model, backend=B)
        return Embedding(weight=weight)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "Embedding":
        return self.init(device, backend).load_record(record)


class Embedding(Module):
    """A lookup table of `n_embedding` vectors of size `d_model`."""

    weight: Param

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Int `[batch, seq]` -> `[batch, seq, d_model]`: row `input[b, s]` of the table."""
        if input.ndim != 2:
            raise ValueError(f"Embedding: expects Int indices [batch, seq], got rank {input.ndim} {input.dims()}")
        batch, seq = input.dims()
        w = self.weight.val()
        # `select` gathers whole rows; its backward adds into the selected rows.
        rows = w.select(0, input.reshape([batch * seq]))
        return rows.reshape([batch, seq, w.dims()[1]])

    def extra_repr(self) -> dict:
        n, d = self.weight.val().dims()
        return {"n_embedding": n, "d_model": d}
