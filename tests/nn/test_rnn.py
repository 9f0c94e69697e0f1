"""Lstm and Gru against torch.nn.LSTM / torch.nn.GRU (batch_first).

PyTorch stacks the gates' weights: LSTM rows (input, forget, cell, output),
GRU rows (reset, update, new); each block is the transpose of Burn's
`[d_in, d_out]` weight.
"""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.autodiff import Autodiff
from burnbook.backend import NdArray

from .helpers import TOL, B, assert_close, assert_match, run_burn, run_torch, seeded, set_param

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


# -- the fused recurrent ops: NdArray's NumPy loop and the protocol-only default ------------

def _layer(kind: str, backend, bias: bool, reset_after: bool = True, drop: tuple = ()):
    """An Lstm/Gru on `backend` with its torch twin (float64); the gate
    transforms named in `drop` lose their bias (a zero bias in torch)."""
    B.seed(5)
    d_in, h = 5, 4
    if kind == "lstm":
        layer = nn.LstmConfig(d_in, h, bias=bias).init(backend=backend)
        ref, order = torch.nn.LSTM(d_in, h, bias=bias, batch_first=True).double(), LSTM_ORDER
    else:
        layer = nn.GruConfig(d_in, h, bias=bias, reset_after=reset_after).init(backend=backend)
        ref, order = torch.nn.GRU(d_in, h, bias=bias, batch_first=True).double(), GRU_ORDER
    _copy_gates(layer, ref, order, bias)
    for gate, side in drop:
        _drop_bias(layer, ref, order, gate, side)
    return layer, ref


def _drop_bias(layer, ref, order: tuple, gate: str, side: str) -> None:
    """Remove `gate`'s input ("ih") or hidden ("hh") bias; zero it in torch."""
    h = layer.d_hidden
    rows = slice(order.index(gate) * h, (order.index(gate) + 1) * h)
    with torch.no_grad():
        getattr(ref, f"bias_{side}_l0")[rows] = 0.0
    getattr(getattr(layer, gate), "input_transform" if side == "ih" else "hidden_transform").bias = None


def _torch_forward(kind: str, ref, x: np.ndarray, states: tuple) -> tuple:
    """torch's every-step hidden states (and, for an LSTM, cell states)."""
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    if kind == "gru":
        return (ref(t(x), t(states[0])[None])[0].detach().numpy(),)
    state, cells, hiddens = (t(states[1])[None], t(states[0])[None]), [], []
    for step in range(x.shape[1]):
        out, state = ref(t(x[:, step:step + 1]), state)
        hiddens.append(out.detach().numpy())
        cells.append(state[1].detach().numpy().transpose(1, 0, 2))
    return np.concatenate(cells, 1), np.concatenate(hiddens, 1)


FUSED = [("lstm", True, True, ()), ("lstm", False, True, ()),
         ("lstm", True, True, (("forget_gate", "hh"), ("cell_gate", "ih"))),
         ("gru", True, True, ()), ("gru", False, True, ()), ("gru", True, True, (("new_gate", "hh"),)),
         ("gru", True, False, (("reset_gate", "ih"),)), ("gru", False, False, ())]


@pytest.mark.parametrize("kind,bias,reset_after,drop", FUSED)
@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_ndarray_fused_op_matches_torch(kind: str, bias: bool, reset_after: bool, drop: tuple,
                                        scale: float) -> None:
    """NdArray's one-loop LSTM/GRU (`ndarray/layers.py`) against torch, with
    initial states, missing biases, both GRU reset forms and, at scale 30,
    saturated gates (its sigmoid is 0.5 tanh(a/2) + 0.5)."""
    layer, ref = _layer(kind, NdArray, bias, reset_after, drop)
    x = seeded([3, 6, 5], 11) * scale
    states = (seeded([3, 4], 12), seeded([3, 4], 13))[: 2 if kind == "lstm" else 1]
    ts = [Tensor[NdArray, 2].from_data(s.astype(np.float32)) for s in states]
    ours = layer.forward(Tensor[NdArray, 3].from_data(x.astype(np.float32)), tuple(ts) if kind == "lstm" else ts[0])
    ours = ours if kind == "lstm" else (ours,)
    if kind == "gru" and not reset_after:  # torch has only the reset-after form: the formula by hand
        theirs = (_gru_reset_before(layer, x, states[0]),)
    else:
        theirs = _torch_forward(kind, ref, x, states)
    for got, want in zip(ours, theirs):
        assert got.dims() == [3, 6, 4]
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5, atol=2e-6)


def _gru_reset_before(layer, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    def affine(lin, v):
        out = v @ lin.weight.val().to_numpy().astype(np.float64)
        return out if lin.bias is None else out + lin.bias.val().to_numpy()

    def gate(g, xt, hv):
        return affine(g.input_transform, xt) + affine(g.hidden_transform, hv)

    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    out = []
    for t in range(x.shape[1]):
        z, r = sig(gate(layer.update_gate, x[:, t], h)), sig(gate(layer.reset_gate, x[:, t], h))
        n = np.tanh(gate(layer.new_gate, x[:, t], r * h))
        h = (1 - z) * n + z * h
        out.append(h)
    return np.stack(out, 1)


@pytest.mark.parametrize("kind,bias,reset_after,drop", [FUSED[2], FUSED[5], FUSED[6]])
def test_default_recurrent_ops_follow_the_protocol(kind: str, bias: bool, reset_after: bool, drop: tuple) -> None:
    """`ModuleOps.lstm`/`gru` (the defaults every backend but NdArray runs)
    on Autodiff[Strict]: only protocol calls; forward and every gradient
    against torch."""
    from ..autodiff.strict import Strict

    AS = Autodiff[Strict]
    layer, ref = _layer(kind, AS, bias, reset_after, drop)
    layer_nd, _ = _layer(kind, NdArray, bias, reset_after, drop)
    x = seeded([2, 4, 5], 14)
    xt = Tensor[AS, 3].from_data(x.astype(np.float32)).require_grad()
    out = layer.forward(xt)
    out = Tensor.cat(list(out), 2) if kind == "lstm" else out
    fused = layer_nd.forward(Tensor[NdArray, 3].from_data(x.astype(np.float32)))
    fused = np.concatenate([o.to_numpy() for o in fused], 2) if kind == "lstm" else fused.to_numpy()
    np.testing.assert_allclose(out.to_numpy(), fused, rtol=1e-5, atol=1e-6)
    if kind == "gru" and not reset_after:
        return  # torch has no reset-before GRU; the forward was checked against NdArray's
    r = seeded(out.dims(), 15)
    grads = out.mul(Tensor[AS, 3].from_data(r.astype(np.float32))).sum().backward()
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    zeros = (np.zeros((2, 4)),) * 2
    if kind == "lstm":
        cells, hiddens = _torch_lstm_tracked(ref, tx)
        theirs = torch.cat([cells, hiddens], 2)
    else:
        theirs = ref(tx, torch.tensor(zeros[0])[None])[0]
    (theirs * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(xt.grad(grads).to_numpy(), tx.grad.numpy(), **TOL)
    w = layer.input_gate if kind == "lstm" else layer.new_gate
    name = "input_gate" if kind == "lstm" else "new_gate"
    order = LSTM_ORDER if kind == "lstm" else GRU_ORDER
    rows = slice(order.index(name) * 4, (order.index(name) + 1) * 4)
    np.testing.assert_allclose(w.hidden_transform.weight.val().grad(grads).to_numpy(),
                               ref.weight_hh_l0.grad.numpy()[rows].T, **TOL)


def _torch_lstm_tracked(ref, tx):
    state, cells, hiddens = None, [], []
    for step in range(tx.shape[1]):
        out, state = ref(tx[:, step:step + 1], state)
        hiddens.append(out)
        cells.append(state[1].transpose(0, 1))
    return torch.cat(cells, 1), torch.cat(hiddens, 1)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_ndarray_fused_op_follows_new_weights(kind: str) -> None:
    """NdArray keeps a layer's packed weights per source arrays: a gate
    given a new weight, then a bias removed, must be seen on the next call."""
    layer, ref = _layer(kind, NdArray, True)
    order = LSTM_ORDER if kind == "lstm" else GRU_ORDER
    x = seeded([2, 3, 5], 16).astype(np.float32)
    zeros = [np.zeros((2, 4))] * (2 if kind == "lstm" else 1)
    kept = []  # the replaced params stay alive, so their cache entries do too
    for step in range(3):
        if step == 1:
            lin = getattr(layer, order[1]).hidden_transform
            kept.append(lin.weight)
            lin.weight = lin.weight.with_value(Tensor[NdArray, 2].from_data(seeded([4, 4], 17).astype(np.float32)))
            _copy_gates(layer, ref, order, True)
        if step == 2:
            kept.append(getattr(layer, order[2]).input_transform.bias)
            _drop_bias(layer, ref, order, order[2], "ih")
        out = layer.forward(Tensor[NdArray, 3].from_data(x))
        got = out[1] if kind == "lstm" else out
        want = _torch_forward(kind, ref, x, tuple(zeros))[-1]
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5, atol=2e-6)


def test_recurrent_ops_name_what_does_not_fit() -> None:
    from burnbook.tensor import module as F

    lstm = nn.LstmConfig(3, 4).init(backend=NdArray)
    x = Tensor[NdArray, 3].zeros([2, 5, 3])
    with pytest.raises(ValueError, match=r"x \[2, 0, 3\] \[batch, seq, d_input\] has no time step"):
        lstm.forward(Tensor[NdArray, 3].zeros([2, 0, 3]))
    with pytest.raises(ValueError, match=r"lstm: cell is \[3, 4\], expected \[2, 4\]"):
        lstm.forward(x, (Tensor[NdArray, 2].zeros([3, 4]), Tensor[NdArray, 2].zeros([2, 4])))
    with pytest.raises(ValueError, match=r"Lstm: expects \[batch, seq, 3\], got \[2, 5, 4\]"):
        lstm.forward(Tensor[NdArray, 3].zeros([2, 5, 4]))
    gates = [lstm.input_gate, lstm.output_gate, lstm.forget_gate, lstm.cell_gate]
    wx = [g.input_transform.weight.val() for g in gates]
    bx = [g.input_transform.bias.val() for g in gates]
    wh = [g.hidden_transform.weight.val() for g in gates]
    with pytest.raises(ValueError, match=r"input_weights\[2\] is \[3, 5\], expected \[3, 4\]"):
        F.lstm(x, wx[:2] + [Tensor[NdArray, 2].zeros([3, 5])] + wx[3:], bx, wh, bx)
    with pytest.raises(ValueError, match=r"input_biases needs one entry per gate \(4\), got 3"):
        F.lstm(x, wx, bx[:3], wh, bx)
    with pytest.raises(TypeError, match=r"hidden_weights\[1\] must be a Tensor"):
        F.lstm(x, wx, bx, [wh[0], None, wh[2], wh[3]], bx)
    with pytest.raises(TypeError, match="different backends"):
        F.gru(Tensor[B, 3].zeros([2, 5, 3]), wx[:3], bx[:3], wh[:3], bx[:3])
