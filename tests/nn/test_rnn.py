"""Lstm and Gru against torch.nn.LSTM / torch.nn.GRU (batch_first).

PyTorch stacks the gates' weights: LSTM rows (input, forget, cell, output),
GRU rows (reset, update, new); each block is the transpose of Burn's
`[d_in, d_out]` weight.
"""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor, nn

from .helpers import B, assert_close, assert_match, run_burn, run_torch, seeded, set_param

torch = pytest.importorskip("torch")

LSTM_ORDER = ("input_gate", "forget_gate", "cell_gate", "output_gate")
GRU_ORDER = ("reset_gate", "update_gate", "new_gate")


def _copy_gates(module, ref, order: tuple[str, ...], bias: bool) -> dict:
    """Copy each gate into torch's stacked tensors; return the param_map."""
    h = module.d_hidden
    gates = [getattr(module, name) for name in order]
    set_param(ref.weight_ih_l0, np.concatenate([g.input_transform.weight.val().to_numpy().T for g in gates]))
    set_param(ref.weight_hh_l0, np.concatenate([g.hidden_transform.weight.val().to_numpy().T for g in gates]))
    if bias:
        set_param(ref.bias_ih_l0, np.concatenate([g.input_transform.bias.val().to_numpy() for g in gates]))
        set_param(ref.bias_hh_l0, np.concatenate([g.hidden_transform.bias.val().to_numpy() for g in gates]))
    params = {}
    for i, name in enumerate(order):
        rows = slice(i * h, (i + 1) * h)
        for ours, theirs in (("input_transform", "ih"), ("hidden_transform", "hh")):
            params[f"{name}.{ours}.weight"] = (
                lambda t=theirs, r=rows: getattr(ref, f"weight_{t}_l0").grad.numpy()[r].T)
            if bias:
                params[f"{name}.{ours}.bias"] = lambda t=theirs, r=rows: getattr(ref, f"bias_{t}_l0").grad.numpy()[r]
    return params


@pytest.mark.parametrize("bias", [True, False])
def test_lstm_matches_torch(bias: bool) -> None:
    B.seed(0)
    lstm = nn.LstmConfig(3, 4, bias=bias).init()
    ref = torch.nn.LSTM(3, 4, bias=bias, batch_first=True).double()
    params = _copy_gates(lstm, ref, LSTM_ORDER, bias)
    x = seeded([2, 5, 3], 1)
    # Both of Burn's outputs enter the loss: hidden states and cell states.
    ours = run_burn(lstm, lambda m, x: Tensor.cat(list(m.forward(x)), 2), x)

    def torch_both(x):
        out, (h_n, c_n) = ref(x)
        cells = []  # torch only returns the last cell state: recompute every step's
        state = None
        for t in range(x.shape[1]):
            _, state = ref(x[:, t:t + 1], state)
            cells.append(state[1].transpose(0, 1))
        assert torch.allclose(state[1][0], c_n[0])
        return torch.cat([torch.cat(cells, 1), out], 2)

    assert_match(ours, run_torch(torch_both, x), params)


def test_lstm_initial_state_and_shapes() -> None:
    B.seed(1)
    lstm = nn.LstmConfig(3, 4).init()
    ref = torch.nn.LSTM(3, 4, batch_first=True).double()
    _copy_gates(lstm, ref, LSTM_ORDER, True)
    x, c0, h0 = seeded([2, 3, 3], 2), seeded([2, 4], 3), seeded([2, 4], 4)
    cells, hiddens = lstm.forward(Tensor[B, 3].from_data(x), (Tensor[B, 2].from_data(c0), Tensor[B, 2].from_data(h0)))
    assert cells.dims() == hiddens.dims() == [2, 3, 4]
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    out, (h_n, c_n) = ref(t(x), (t(h0)[None], t(c0)[None]))
    assert_close(hiddens.to_numpy(), out.detach().numpy())
    assert_close(cells.to_numpy()[:, -1], c_n[0].detach().numpy())
    assert repr(lstm).endswith("d_input: 3, d_hidden: 4, bias: true\n  params: 144\n}")
    assert lstm.num_params() == sum(p.numel() for p in ref.parameters())


@pytest.mark.parametrize("bias", [True, False])
def test_gru_matches_torch(bias: bool) -> None:
    B.seed(2)
    gru = nn.GruConfig(3, 4, bias=bias).init()
    ref = torch.nn.GRU(3, 4, bias=bias, batch_first=True).double()
    params = _copy_gates(gru, ref, GRU_ORDER, bias)
    x = seeded([2, 5, 3], 5)
    ours = run_burn(gru, lambda m, x: m.forward(x), x)
    theirs = run_torch(lambda x: ref(x)[0], x)
    assert_match(ours, theirs, params)


def test_gru_with_initial_state() -> None:
    B.seed(3)
    gru = nn.GruConfig(2, 3).init()
    ref = torch.nn.GRU(2, 3, batch_first=True).double()
    _copy_gates(gru, ref, GRU_ORDER, True)
    x, h0 = seeded([4, 3, 2], 6), seeded([4, 3], 7)
    out = gru.forward(Tensor[B, 3].from_data(x), Tensor[B, 2].from_data(h0))
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    assert_close(out.to_numpy(), ref(t(x), t(h0)[None])[0].detach().numpy())


def test_gru_reset_before_variant_matches_the_paper_form() -> None:
    B.seed(4)
    gru = nn.GruConfig(2, 3, reset_after=False).init()
    x = seeded([2, 4, 2], 8)
    out = gru.forward(Tensor[B, 3].from_data(x)).to_numpy()

    def gate(g, xt, h):
        p = lambda lin: (lin.weight.val().to_numpy(), lin.bias.val().to_numpy())  # noqa: E731
        (wx, bx), (wh, bh) = p(g.input_transform), p(g.hidden_transform)
        return xt @ wx + bx + h @ wh + bh

    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h = np.zeros((2, 3))
    for t in range(4):
        z, r = sig(gate(gru.update_gate, x[:, t], h)), sig(gate(gru.reset_gate, x[:, t], h))
        n = np.tanh(gate(gru.new_gate, x[:, t], r * h))
        h = (1 - z) * n + z * h
        assert_close(out[:, t], h)


def test_gate_controller_and_initializer_default() -> None:
    gate = nn.GateController.new(3, 5, True, nn.Initializer.XavierNormal(gain=1.0))
    out = gate.gate_product(Tensor[B, 2].ones([2, 3]), Tensor[B, 2].ones([2, 5]))
    assert out.dims() == [2, 5]
    assert nn.LstmConfig(3, 4).initializer == nn.Initializer.XavierNormal(gain=1.0)
    assert [p for p, _ in gate.named_params()] == [
        "input_transform.weight", "input_transform.bias", "hidden_transform.weight", "hidden_transform.bias"]
