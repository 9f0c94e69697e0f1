"""Runtime helpers for the recurrent family (`ops/recurrent`): the recurrent layers LSTM, GRU and RNN.

ONNX lays a recurrent node's tensors out time-major (`layout=0`: X is
`[seq, batch, input]`, Y `[seq, directions, batch, hidden]`, Y_h and Y_c
`[directions, batch, hidden]`) or batch-major (`layout=1`: `[batch, seq,
input]`, `[batch, seq, directions, hidden]`, `[batch, directions, hidden]`).
`recurrent_layers` runs burnbook's own `nn.Lstm`/`nn.Gru` layers (one per
direction) and arranges their outputs that way; `recurrent` is the general
recurrence, step by step from Tensor ops, for what those layers do not cover
(RNN, weights computed at run time, sequence_lens, peepholes, clip, other
activations).
"""

from __future__ import annotations

from typing import Any, Sequence

from burnbook.tensor import Int, Tensor, activation

# gates per cell kind, in ONNX's stacking order (LSTM i,o,f,c; GRU z,r,h)
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DEFAULT_ACTIVATIONS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}


def _softsign(t: Any) -> Any:
    return t.div(t.abs().add_scalar(1.0))


ACTIVATIONS = {
    "Sigmoid": activation.sigmoid,
    "Tanh": lambda t: t.tanh(),
    "Relu": activation.relu,
    "Softsign": _softsign,
    "Softplus": activation.softplus,
}
"""The parameterless activation functions the recurrent operators may name."""


def _time_major(x: Any, layout: int) -> Any:
    return x.swap_dims(0, 1) if layout == 1 else x


def _reversed_steps(x: Any, dim: int) -> Any:
    """`x` with the entries along `dim` in the opposite order."""
    n = x.dims()[dim]
    if n < 2:
        return x
    return x.select(dim, Tensor[x.backend, 1, Int].arange_step(n - 1, -1, -1, x.device()))


def _stacked(ts: list, dim: int) -> Any:
    """`Tensor.stack`, a view for one direction (no copy, no checks to repeat)."""
    return ts[0].unsqueeze_dim(dim) if len(ts) == 1 else Tensor.stack(ts, dim)


def _arrange(ys: list, finals: list, cells: list | None, layout: int) -> tuple:
    """Per-direction `[seq, batch, hidden]` outputs and `[batch, hidden]`
    final states, stacked into ONNX's Y, Y_h (and Y_c) for `layout`."""
    y = _stacked(ys, 1)  # [seq, dirs, batch, hidden]
    y_h = _stacked(finals, 0)  # [dirs, batch, hidden]
    y_c = _stacked(cells, 0) if cells is not None else None
    if layout == 1:
        y = y.permute([2, 0, 1, 3])
        y_h = y_h.swap_dims(0, 1)
        y_c = y_c.swap_dims(0, 1) if y_c is not None else None
    return (y, y_h) if y_c is None else (y, y_h, y_c)


def _direction(state: Any, d: int) -> Any:
    """Direction `d`'s `[batch, hidden]` slice of a `[dirs, batch, hidden]` state."""
    if d == 0 and state.dims()[0] == 1:
        return state.squeeze(0)   # one op where narrow + squeeze are two
    return state.narrow(0, d, 1).squeeze(0)


def recurrent_layers(kind: str, layers: Sequence[Any], x: Any, initial_h: Any = None, initial_c: Any = None,
                     direction: str = "forward", layout: int = 0) -> tuple:
    """ONNX LSTM or GRU (`kind`) through burnbook layers: `layers` holds one
    `nn.Lstm`/`nn.Gru` per direction (forward first). A reverse direction
    runs its layer over the sequence read backwards and turns the result
    back. Returns (Y, Y_h, Y_c) for an LSTM, (Y, Y_h) for a GRU."""
    x = x if layout == 1 else x.swap_dims(0, 1)  # the layers are batch first
    h0 = _time_major(initial_h, layout) if initial_h is not None else None
    c0 = _time_major(initial_c, layout) if initial_c is not None else None
    steps = x.dims()[1]
    outs, lasts, last_cells = [], [], []   # [batch, seq, hidden] in time order; [batch, 1, hidden]
    for d, layer in enumerate(layers):
        backwards = direction == "reverse" or d == 1
        xin = _reversed_steps(x, 1) if backwards else x
        h = _direction(h0, d) if h0 is not None else None
        if kind == "LSTM":
            state = None
            if h0 is not None or c0 is not None:
                zeros = (h if h is not None else _direction(c0, d)).zeros_like()
                c = _direction(c0, d) if c0 is not None else zeros
                state = (c, h if h is not None else zeros)
            cs, hs = layer(xin, state)
            last_cells.append(cs if steps == 1 else cs.narrow(1, steps - 1, 1))
        else:
            hs = layer(xin, h)
        lasts.append(hs if steps == 1 else hs.narrow(1, steps - 1, 1))
        outs.append(_reversed_steps(hs, 1) if backwards else hs)
    if len(layers) == 1:   # one direction: ONNX's layouts straight from the layer's, fewest ops
        cell = last_cells[0] if kind == "LSTM" else None
        if layout == 1:   # [batch, seq, 1, hidden]; states [batch, 1, hidden]
            y, y_h, y_c = outs[0].unsqueeze_dim(2), lasts[0], cell
        else:             # [seq, 1, batch, hidden]; states [1, batch, hidden]
            y, y_h = outs[0].swap_dims(0, 1).unsqueeze_dim(1), lasts[0].swap_dims(0, 1)
            y_c = cell.swap_dims(0, 1) if cell is not None else None
        return (y, y_h) if y_c is None else (y, y_h, y_c)
    ys = [o.swap_dims(0, 1) for o in outs]
    finals = [t.squeeze(1) for t in lasts]
    cells = [t.squeeze(1) for t in last_cells]
    return _arrange(ys, finals, cells if kind == "LSTM" else None, layout)


def recurrent(kind: str, x: Any, w: Any, r: Any, b: Any = None, sequence_lens: Any = None, initial_h: Any = None,
              initial_c: Any = None, p: Any = None, direction: str = "forward", layout: int = 0,
              activations: Sequence[str] | None = None, clip: float | None = None,
              linear_before_reset: int = 0) -> tuple:
    """ONNX LSTM, GRU or RNN (`kind`) in full, one step at a time: W
    `[dirs, gates*hidden, input]`, R `[dirs, gates*hidden, hidden]`, B
    `[dirs, 2*gates*hidden]` (input then recurrence biases), P `[dirs,
    3*hidden]` (LSTM peepholes i,o,f). Steps at or past a batch entry's
    `sequence_lens` leave its state alone and give zeros in Y.
    Returns (Y, Y_h, Y_c) for an LSTM, (Y, Y_h) otherwise."""
    x = _time_major(x, layout)
    h0 = _time_major(initial_h, layout) if initial_h is not None else None
    c0 = _time_major(initial_c, layout) if initial_c is not None else None
    steps, batch, d_input = x.dims()
    dirs = w.dims()[0]
    hidden = r.dims()[2]
    gates = GATES[kind]
    names = list(activations) if activations else list(DEFAULT_ACTIVATIONS[kind]) * dirs
    per_dir = len(DEFAULT_ACTIVATIONS[kind])
    lens = None
    if sequence_lens is not None:
        lens = sequence_lens.float().reshape([batch, 1])
    flat = x.reshape([steps * batch, d_input])
    ys, finals, cells = [], [], []
    for d in range(dirs):
        fs = [ACTIVATIONS[n] for n in names[d * per_dir:(d + 1) * per_dir]]
        wd = w.narrow(0, d, 1).reshape([gates * hidden, d_input]).transpose()
        rd = r.narrow(0, d, 1).reshape([gates * hidden, hidden]).transpose()
        xw = flat.matmul(wd)
        rb = None
        if b is not None:
            bd = b.narrow(0, d, 1).reshape([2 * gates * hidden])
            xw = xw.add(bd.narrow(0, 0, gates * hidden).unsqueeze())
            rb = bd.narrow(0, gates * hidden, gates * hidden).unsqueeze()
        xw = xw.reshape([steps, batch, gates * hidden])
        h = h0.narrow(0, d, 1).squeeze(0) if h0 is not None else Tensor[x.backend, 2].zeros([batch, hidden],
                                                                                        x.device())
        c = None
        if kind == "LSTM":
            c = c0.narrow(0, d, 1).squeeze(0) if c0 is not None else h.zeros_like()
        peep = p.narrow(0, d, 1).reshape([1, 3 * hidden]) if p is not None else None
        backwards = direction == "reverse" or d == 1
        outs: list = [None] * steps
        for t in (range(steps - 1, -1, -1) if backwards else range(steps)):
            xt = xw.narrow(0, t, 1).squeeze(0)
            if kind == "GRU":
                h_new = _gru_step(xt, h, rd, rb, hidden, fs, clip, linear_before_reset)
            else:
                g = xt.add(h.matmul(rd))
                g = g.add(rb) if rb is not None else g
                if kind == "RNN":
                    h_new = fs[0](_clipped(g, clip))
                else:
                    h_new, c_new = _lstm_step(g, c, peep, hidden, fs, clip)
            if lens is not None:
                live = lens.greater_elem(float(t)).float()  # [batch, 1]: 1 while t < length
                h_new = h_new.mul(live)
                h = h_new.add(h.mul(live.neg().add_scalar(1.0)))
                if kind == "LSTM":
                    c = c_new.mul(live).add(c.mul(live.neg().add_scalar(1.0)))
            else:
                h = h_new
                if kind == "LSTM":
                    c = c_new
            outs[t] = h_new
        ys.append(Tensor.stack(outs, 0))
        finals.append(h)
        cells.append(c)
    return _arrange(ys, finals, cells if kind == "LSTM" else None, layout)


def _clipped(g: Any, clip: float | None) -> Any:
    return g if clip is None else g.clamp(-clip, clip)


def _lstm_step(g: Any, c: Any, peep: Any, hidden: int, fs: list, clip: float | None) -> tuple:
    """One LSTM step from the summed gate inputs `g` `[batch, 4*hidden]`
    (ONNX order i, o, f, c): the new hidden and cell states."""
    f_act, g_act, h_act = fs
    gi, go, gf, gc = (g.narrow(1, k * hidden, hidden) for k in range(4))
    if peep is not None:
        pi, po, pf = (peep.narrow(1, k * hidden, hidden) for k in range(3))
        gi, gf = gi.add(pi.mul(c)), gf.add(pf.mul(c))
    i = f_act(_clipped(gi, clip))
    f = f_act(_clipped(gf, clip))
    c_new = f.mul(c).add(i.mul(g_act(_clipped(gc, clip))))
    if peep is not None:
        go = go.add(po.mul(c_new))
    o = f_act(_clipped(go, clip))
    return o.mul(h_act(c_new)), c_new


def _gru_step(xt: Any, h: Any, rd: Any, rb: Any, hidden: int, fs: list, clip: float | None,
              linear_before_reset: int) -> Any:
    """One GRU step; `xt` holds the input part with its bias (ONNX order z, r, h)."""
    f_act, g_act = fs
    xz, xr, xh = (xt.narrow(1, k * hidden, hidden) for k in range(3))
    rz, rr, rh = (rd.narrow(1, k * hidden, hidden) for k in range(3))
    bz, br, bh = (rb.narrow(1, k * hidden, hidden) for k in range(3)) if rb is not None else (None, None, None)

    def biased(v: Any, bias: Any) -> Any:
        return v if bias is None else v.add(bias)

    z = f_act(_clipped(xz.add(biased(h.matmul(rz), bz)), clip))
    r = f_act(_clipped(xr.add(biased(h.matmul(rr), br)), clip))
    if linear_before_reset:
        n_in = xh.add(r.mul(biased(h.matmul(rh), bh)))
    else:
        n_in = xh.add(biased(r.mul(h).matmul(rh), bh))
    n = g_act(_clipped(n_in, clip))
    return n.sub(z.mul(n)).add(z.mul(h))
