"""Recurrent layers: `GateController`, `Lstm`, `Gru` (batch first).

Each gate is a `GateController`: two `Linear`s, one on the input and one on
the hidden state, in Burn's `[d_in, d_out]` layout. PyTorch packs the same
weights as `weight_ih_l0 = [W_i; W_f; W_g; W_o]` (LSTM) or
`[W_r; W_z; W_n]` (GRU), each block transposed: `W_i = input_gate.
input_transform.weight.T`, and `bias_ih`/`bias_hh` split the same way.
"""

from __future__ import annotations

from typing import Any

from burnbook.config import config
from burnbook.module import Module
from burnbook.tensor import Tensor
from burnbook.tensor import module as F
from .common import check_config, resolve_backend, show
from .initializer import Initializer, XavierNormal
from .linear import Linear, LinearConfig

__all__ = ["GateController", "Lstm", "LstmConfig", "Gru", "GruConfig"]


class GateController(Module):
    """One gate: `input @ W_x + b_x + hidden @ W_h + b_h`, `[batch, d_output]`."""

    input_transform: Linear
    hidden_transform: Linear

    @classmethod
    def new(cls, d_input: int, d_output: int, bias: bool, initializer: Initializer,
            device: Any = None, backend: type | None = None) -> "GateController":
        """Burn's `GateController::new(d_input, d_output, bias, initializer, device)`."""
        B = resolve_backend(device, backend)
        return cls(
            input_transform=LinearConfig(d_input, d_output, bias, initializer).init(device, B),
            hidden_transform=LinearConfig(d_output, d_output, bias, initializer).init(device, B),
        )

    def gate_product(self, input: Tensor, hidden: Tensor, reset: Tensor | None = None) -> Tensor:  # noqa: A002
        """`[batch, d_input]`, `[batch, d_output]` -> the gate's pre-activation
        `[batch, d_output]`; with `reset`, the hidden part is scaled by it
        after its bias (the GRU's new gate, as PyTorch computes it)."""
        x = self.input_transform.forward(input)
        h = self.hidden_transform.forward(hidden)
        return x + (h if reset is None else reset * h)


def _weights(gates: list) -> tuple[list, list, list, list]:
    """The gates' input weights, input biases, hidden weights and hidden
    biases (None where a gate has no bias), in `gates`' order, for the
    backend's recurrent ops (`burnbook.tensor.module.lstm`/`gru`)."""
    def side(linears: list) -> tuple[list, list]:
        return ([lin.weight.val() for lin in linears],
                [None if lin.bias is None else lin.bias.val() for lin in linears])
    return (*side([g.input_transform for g in gates]), *side([g.hidden_transform for g in gates]))


def _gates(names: tuple[str, ...], d_input: int, d_hidden: int, bias: bool,
           initializer: Initializer, device: Any, backend: type) -> dict:
    return {n: GateController.new(d_input, d_hidden, bias, initializer, device, backend) for n in names}


def _check_input(name: str, batched_input: Tensor, d_input: int) -> None:
    dims = batched_input.dims()
    if batched_input.ndim != 3 or dims[2] != d_input:
        raise ValueError(f"{name}: expects [batch, seq, {d_input}], got {dims}")


@config
class LstmConfig:
    """Settings of an `Lstm`."""

    d_input: int
    d_hidden: int
    bias: bool = True
    initializer: Initializer = XavierNormal(gain=1.0)

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_input", "d_hidden"))

    def init(self, device: Any = None, backend: type | None = None) -> "Lstm":
        self.__post_init__()
        B = resolve_backend(device, backend)
        gates = _gates(("input_gate", "forget_gate", "output_gate", "cell_gate"),
                       self.d_input, self.d_hidden, self.bias, self.initializer, device, B)
        return Lstm(**gates, d_hidden=self.d_hidden)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "Lstm":
        return self.init(device, backend).load_record(record)


class Lstm(Module):
    """A one-layer, one-direction LSTM over `[batch, seq, d_input]`.

    `forward` returns Burn 0.13's pair `(cell_states, hidden_states)`, both
    `[batch, seq, d_hidden]`: every step's states. PyTorch's
    `output, (h_n, c_n) = lstm(x)` is `hidden_states`, and the last step of
    each (`hidden_states[:, -1]`, `cell_states[:, -1]`).
    """

    input_gate: GateController
    forget_gate: GateController
    output_gate: GateController
    cell_gate: GateController
    d_hidden: int

    def forward(self, batched_input: Tensor,
                state: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        """`[batch, seq, d_input]` and an optional initial `(cell, hidden)`,
        each `[batch, d_hidden]` (zeros when None) -> `(cell_states,
        hidden_states)`, each `[batch, seq, d_hidden]`."""
        d_input = self.input_gate.input_transform.weight.val().dims()[0]
        _check_input("Lstm", batched_input, d_input)
        cell, hidden = (None, None) if state is None else state   # None: zeros
        # ONNX's gate order: the three sigmoid gates first, then the cell's
        gates = _weights([self.input_gate, self.output_gate, self.forget_gate, self.cell_gate])
        return F.lstm(batched_input, *gates, cell, hidden)

    def extra_repr(self) -> dict:
        d_input = self.input_gate.input_transform.weight.val().dims()[0]
        return {"d_input": d_input, "d_hidden": self.d_hidden,
                "bias": show(self.input_gate.input_transform.bias is not None)}


@config
class GruConfig:
    """Settings of a `Gru`. `reset_after=True` applies the reset gate after
    the hidden transform (PyTorch's and cuDNN's GRU); False applies it to the
    hidden state before (the original paper's form)."""

    d_input: int
    d_hidden: int
    bias: bool = True
    reset_after: bool = True
    initializer: Initializer = XavierNormal(gain=1.0)

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_input", "d_hidden"))

    def init(self, device: Any = None, backend: type | None = None) -> "Gru":
        self.__post_init__()
        B = resolve_backend(device, backend)
        gates = _gates(("update_gate", "reset_gate", "new_gate"),
                       self.d_input, self.d_hidden, self.bias, self.initializer, device, B)
        return Gru(**gates, d_hidden=self.d_hidden, reset_after=self.reset_after)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "Gru":
        return self.init(device, backend).load_record(record)


class Gru(Module):
    """A one-layer, one-direction GRU over `[batch, seq, d_input]`.

    z = sigmoid(update), r = sigmoid(reset), n = tanh(W_n x + b_n + r * (U_n h + c_n)),
    h' = (1 - z) * n + z * h: the recurrence of later Burn releases and of
    torch.nn.GRU. (Burn 0.13's Gru fed every step the initial state rather
    than the previous step's output; we do not copy that bug.)
    """

    update_gate: GateController
    reset_gate: GateController
    new_gate: GateController
    d_hidden: int
    reset_after: bool = True

    def forward(self, batched_input: Tensor, state: Tensor | None = None) -> Tensor:
        """`[batch, seq, d_input]` and an optional initial hidden state
        `[batch, d_hidden]` (zeros when None) -> every step's hidden state,
        `[batch, seq, d_hidden]` (PyTorch's `output`)."""
        d_input = self.update_gate.input_transform.weight.val().dims()[0]
        _check_input("Gru", batched_input, d_input)
        hidden = state   # None: zeros
        gates = _weights([self.update_gate, self.reset_gate, self.new_gate])
        return F.gru(batched_input, *gates, hidden, self.reset_after)

    def extra_repr(self) -> dict:
        d_input = self.update_gate.input_transform.weight.val().dims()[0]
        return {"d_input": d_input, "d_hidden": self.d_hidden,
                "bias": show(self.update_gate.input_transform.bias is not None),
                "reset_after": show(self.reset_after)}
