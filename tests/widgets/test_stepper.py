"""BackwardStepper and the engine's observation hook.

Every step of every graph here is checked against PyTorch: the gradient that
arrives at each node (the burnbook graph replayed in torch, read with
`register_hook`) and what each node's rule sends to each parent (torch's
vector-Jacobian product of that one op at the same point). The leaf totals
are checked against `backward()` and against the same function written
directly in torch. Finite differences in float64 (each op replayed in NumPy)
check every step's `input_grads` too, with or without torch.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

from burnbook import Tensor  # noqa: E402
from burnbook.autodiff import nodes_of, observe_backward  # noqa: E402
from burnbook.backend import Autodiff, NdArray  # noqa: E402
from burnbook.tensor import Int  # noqa: E402
from burnbook.tensor import activation  # noqa: E402
from burnbook.tensor import module as F  # noqa: E402
from burnbook.widgets import BackwardStepper  # noqa: E402
from burnbook.widgets.stepper import format_array  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover - torch is a test dependency where it installs
    torch = None

B = Autodiff[NdArray]
RTOL = 1e-5


def close(actual, expected, what):
    """Equal to 1e-5 relative to the reference's scale."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = float(np.abs(expected).max()) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * max(scale, 1e-3), err_msg=what)


# -- the graphs ------------------------------------------------------------------------------

def neuron(x1, w1, x2, w2, b):
    """micrograd's neuron."""
    return (x1 * w1 + x2 * w2 + b).tanh()


NEURON = dict(x1=2.0, w1=-3.0, x2=0.0, w2=1.0, b=6.8813735870195432)

TARGETS = [1, 0, 3, 2]


def linear_ce(x, w, b):
    """A linear layer and softmax cross-entropy (log_softmax, gather, mean)."""
    logits = x.matmul(w) + b.unsqueeze()
    logp = activation.log_softmax(logits, 1)
    t = Tensor[B, 2, Int].from_ints([[k] for k in TARGETS])
    return logp.gather(1, t).neg().mean()


def torch_linear_ce(x, w, b):
    logits = x @ w + b
    return torch.nn.functional.cross_entropy(logits, torch.tensor(TARGETS))


def conv_step(x, w, b):
    """A small conv step: conv2d, relu, global mean."""
    return activation.relu(F.conv2d(x, w, b)).mean()


def torch_conv_step(x, w, b):
    return torch.relu(torch.nn.functional.conv2d(x, w, b)).mean()


def shared(x, w):
    """`a` feeds two ops, and `mul(a, e)` sees x twice through it."""
    a = x * w
    return (a * a.exp() + a.sigmoid()).sum()


def torch_shared(x, w):
    a = x * w
    return (a * a.exp() + a.sigmoid()).sum()


def layout_mix(x, y):
    """Layout ops, broadcasting, division, powers, reductions."""
    t = x.swap_dims(0, 1).reshape([2, 3])              # [3, 2] -> [2, 3]
    u = (t * y).div(y.abs() + 1.0).sub(x.sum().reshape([1, 1]))   # y [1, 3] broadcast
    v = (u.powf_scalar(2.0) + 1.0).sqrt().log().sum_dim(1)
    return v.mul_scalar(0.5).mean()


def torch_layout_mix(x, y):
    t = x.transpose(0, 1).reshape(2, 3)
    u = (t * y) / (y.abs() + 1.0) - x.sum()
    v = ((u ** 2 + 1.0).sqrt().log()).sum(1, keepdim=True)
    return (v * 0.5).mean()


def inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return {
        "linear_ce": dict(x=rng.normal(size=(4, 3)), w=rng.normal(size=(3, 5)), b=rng.normal(size=5)),
        "conv": dict(x=rng.normal(size=(1, 2, 5, 5)), w=rng.normal(size=(3, 2, 3, 3)) * 0.5,
                     b=rng.normal(size=3)),
        "shared": dict(x=rng.normal(size=3), w=rng.normal(size=3)),
        "layout": dict(x=rng.normal(size=(3, 2)), y=rng.normal(size=(1, 3))),
    }


CASES = {
    "neuron": (neuron, neuron, NEURON),
    "linear_ce": (linear_ce, torch_linear_ce, None),
    "conv": (conv_step, torch_conv_step, None),
    "shared": (shared, torch_shared, None),
    "layout": (layout_mix, torch_layout_mix, None),
}


def case(name):
    fn, tfn, values = CASES[name]
    return fn, tfn, values if values is not None else inputs()[name]


@pytest.fixture(params=list(CASES))
def built(request):
    fn, tfn, values = case(request.param)
    return request.param, BackwardStepper(fn, **values), tfn, values


# -- replaying a step in torch -------------------------------------------------------------------

def _torch_op(step, xs):
    """Node `step`'s op in torch on the parents `xs` (torch tensors)."""
    op, a = step.op, step.args
    x = xs[0]
    if op == "add":
        return xs[0] + xs[1]
    if op == "sub":
        return xs[0] - xs[1]
    if op == "mul":
        return xs[0] * xs[1]
    if op == "div":
        return xs[0] / xs[1]
    if op in ("exp", "log", "tanh", "relu", "sigmoid", "neg", "sqrt", "abs"):
        return getattr(torch, op)(x)
    if op == "sum":
        return x.sum().reshape(1)
    if op == "sum_dim":
        return x.sum(a[0], keepdim=True)
    if op == "mean_dim":
        return x.mean(a[0], keepdim=True)
    if op == "mul_scalar":
        return x * a[0]
    if op == "div_scalar":
        return x / a[0]
    if op == "add_scalar":
        return x + a[0]
    if op == "powf_scalar":
        return x ** a[0]
    if op == "reshape":
        return x.reshape(tuple(a[0]))
    if op == "swap_dims":
        return x.transpose(a[0], a[1])
    if op == "matmul":
        return xs[0] @ xs[1]
    if op == "gather":
        return torch.gather(x, a[0], torch.as_tensor(np.asarray(a[1]), dtype=torch.int64))
    if op == "conv2d":
        o = a[0]
        return torch.nn.functional.conv2d(x, xs[1], xs[2], stride=o.stride, padding=o.padding,
                                          dilation=o.dilation, groups=o.groups)
    raise AssertionError(f"no torch replay for op {op!r}")


def _parent_values(stepper, step):
    """The parents' values; an untracked (const) operand of add/sub is
    recovered from the node's value."""
    by_node = {s.node: s for s in stepper.steps}
    vals = [None if pid is None else by_node[pid].value for pid in step.parent_nodes]
    missing = [i for i, v in enumerate(vals) if v is None]
    if missing:
        assert step.op in ("add", "sub") and len(vals) == 2, f"a const operand of {step.op} in a test graph"
        i = missing[0]
        other = vals[1 - i]
        if step.op == "add":
            vals[i] = step.value - other
        else:
            vals[i] = other - step.value if i == 1 else step.value + other
    return vals


def torch_local_vjp(stepper, step):
    """What torch's autograd sends to each parent of `step`'s op alone, for
    the same output gradient."""
    ts = [torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=pid is not None)
          for v, pid in zip(_parent_values(stepper, step), step.parent_nodes)]
    out = _torch_op(step, ts)
    close(out.detach().numpy(), step.value, f"torch replays step {step.index} ({step.op})'s forward")
    wanted = [t for t in ts if t.requires_grad]
    got = iter(torch.autograd.grad(out, wanted, torch.tensor(np.asarray(step.output_grad, dtype=np.float64)),
                                   allow_unused=True))
    return [next(got) if t.requires_grad else None for t in ts]


def torch_arriving(stepper, tfn, values):
    """The gradient arriving at every node: the function computed in torch
    with a hook on every intermediate. Nodes are matched by replaying the
    burnbook graph's ops in order."""
    by_node = {s.node: s for s in stepper.steps}
    leaf_names = {s.node: s.name for s in stepper.steps if s.op == "leaf"}
    made, seen = {}, {}
    for n in stepper.nodes:
        s = by_node[n.id]
        if s.op == "leaf":
            made[n.id] = torch.tensor(np.asarray(values[leaf_names[n.id]], dtype=np.float64).reshape(s.shape),
                                      requires_grad=True)
        else:
            consts = _parent_values(stepper, s)
            xs = [made[p] if p is not None else torch.tensor(np.asarray(c, dtype=np.float64))
                  for p, c in zip(s.parent_nodes, consts)]
            made[n.id] = _torch_op(s, xs)

        def hook(g, nid=n.id):
            seen[nid] = g.detach().numpy().copy()
        made[n.id].register_hook(hook)
    root = made[stepper.steps[0].node]
    root.backward(torch.ones_like(root))
    direct = tfn(**{k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for k, v in values.items()})
    close(root.detach().numpy().reshape(-1), direct.detach().numpy().reshape(-1), "torch replay == torch function")
    return seen


def torch_leaf_grads(tfn, values):
    ts = {k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for k, v in values.items()}
    tfn(**ts).backward()
    return {k: t.grad.numpy() for k, t in ts.items()}


# -- finite differences: a second reference, with no torch --------------------------------------

def _np_conv2d(x, w, b, o):
    assert tuple(o.dilation) == (1, 1) and o.groups == 1, "the test's conv replay is plain"
    (sh, sw), (ph, pw) = o.stride, o.padding
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c, hh, ww = x.shape
    oc, _, kh, kw = w.shape
    ho, wo = (hh - kh) // sh + 1, (ww - kw) // sw + 1
    out = np.zeros((n, oc, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = x[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + (0.0 if b is None else b.reshape(1, -1, 1, 1))


def _np_op(step, xs):
    """Node `step`'s op in NumPy (float64) on the parents' values `xs`."""
    op, a = step.op, step.args
    x = xs[0]
    table = {
        "add": lambda: xs[0] + xs[1], "sub": lambda: xs[0] - xs[1], "mul": lambda: xs[0] * xs[1],
        "div": lambda: xs[0] / xs[1], "exp": lambda: np.exp(x), "log": lambda: np.log(x),
        "tanh": lambda: np.tanh(x), "relu": lambda: np.maximum(x, 0.0), "sigmoid": lambda: 1 / (1 + np.exp(-x)),
        "neg": lambda: -x, "sqrt": lambda: np.sqrt(x), "abs": lambda: np.abs(x),
        "sum": lambda: x.sum().reshape(1), "sum_dim": lambda: x.sum(a[0], keepdims=True),
        "mean_dim": lambda: x.mean(a[0], keepdims=True), "mul_scalar": lambda: x * a[0],
        "div_scalar": lambda: x / a[0], "add_scalar": lambda: x + a[0], "powf_scalar": lambda: x ** a[0],
        "reshape": lambda: x.reshape(tuple(a[0])), "swap_dims": lambda: np.swapaxes(x, a[0], a[1]),
        "matmul": lambda: xs[0] @ xs[1], "gather": lambda: np.take_along_axis(x, np.asarray(a[1]), a[0]),
        "conv2d": lambda: _np_conv2d(xs[0], xs[1], xs[2], a[0]),
    }
    assert op in table, f"no NumPy replay for op {op!r}"
    return table[op]()


def fd_local_vjp(stepper, step, h=1e-6):
    """What each parent gets from `step`'s op, by central differences of
    sum(g * op(parents)) in float64."""
    xs = [np.asarray(v, dtype=np.float64) for v in _parent_values(stepper, step)]
    g = np.asarray(step.output_grad, dtype=np.float64)
    close(_np_op(step, xs), step.value, f"NumPy replays step {step.index} ({step.op})'s forward")
    out = []
    for i, pid in enumerate(step.parent_nodes):
        if pid is None:
            out.append(None)
            continue
        grad = np.zeros_like(xs[i])
        for j in np.ndindex(xs[i].shape):
            hi = [x.copy() for x in xs]
            lo = [x.copy() for x in xs]
            hi[i][j] += h
            lo[i][j] -= h
            grad[j] = ((_np_op(step, hi) - _np_op(step, lo)) * g).sum() / (2 * h)
        out.append(grad)
    return out


def test_each_step_agrees_with_finite_differences(built):
    name, stepper, _, _ = built
    for s in stepper.steps:
        if s.op == "leaf":
            continue
        for i, ref in enumerate(fd_local_vjp(stepper, s)):
            if ref is None:
                assert s.input_grads[i] is None
            else:
                close(s.input_grads[i], ref, f"{name}: step {s.index} ({s.name}) -> parent {i}, finite differences")


# -- the engine hook ---------------------------------------------------------------------------------

def test_observer_sees_every_node_in_the_engines_order_before_accumulation():
    x = Tensor[B, 1].from_floats([0.5, -1.0, 2.0]).require_grad()
    a = x * x          # x twice in one node
    y = (a + a.exp()).sum()   # a used by two ops
    seen = []
    with observe_backward(lambda Bk, n, g, grads: seen.append(
            (n, None if g is None else np.array(Bk.float_into_data(g)),
             [None if v is None else np.array(Bk.float_into_data(v)) for v in grads]))):
        grads = y.backward()
    nodes = nodes_of(y)
    assert len(seen) == len(nodes) and {n.id for n, _, _ in seen} == {n.id for n in nodes}
    assert seen[0][0] is y.into_primitive().node
    order = [n.id for n, _, _ in seen]
    for n, _, _ in seen:   # Kahn's: every child before its parents
        for p in n.parents:
            if p is not None:
                assert order.index(p.id) > order.index(n.id)
    mul = next(s for s in seen if s[0].op == "mul")
    xv = np.array([0.5, -1.0, 2.0])
    assert len(mul[2]) == 2
    close(mul[2][0] + mul[2][1], mul[1] * 2 * xv, "x*x sends g*x to each of its two x")
    leaf = next(s for s in seen if s[0].op == "leaf")
    assert leaf[2] == []
    close(leaf[1], x.grad(grads).to_numpy(), "the leaf's arriving gradient is backward()'s")


def test_no_observer_outside_the_block_and_nesting_restores():
    from burnbook.autodiff import engine

    calls = []
    with observe_backward(lambda *a: calls.append("outer")):
        with observe_backward(lambda *a: calls.append("inner")):
            assert engine._observer is not None
        Tensor[B, 1].from_floats([1.0]).require_grad().exp().sum().backward()
    assert set(calls) == {"outer"}
    assert engine._observer is None
    n = len(calls)
    Tensor[B, 1].from_floats([1.0]).require_grad().exp().sum().backward()
    assert len(calls) == n
    with pytest.raises(TypeError, match="callable"):
        with observe_backward(3):
            pass


# -- every step against torch -----------------------------------------------------------------------

@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_each_step_agrees_with_torch(built):
    name, stepper, tfn, values = built
    arriving = torch_arriving(stepper, tfn, values)
    for s in stepper.steps:
        assert s.node in arriving, f"{name}: torch saw no gradient at step {s.index} ({s.op})"
        close(s.output_grad, arriving[s.node].reshape(s.output_grad.shape),
              f"{name}: gradient arriving at step {s.index} ({s.name})")
        if s.op == "leaf":
            assert s.input_grads == ()
            continue
        assert len(s.input_grads) == len(s.parents)
        for i, ref in enumerate(torch_local_vjp(stepper, s)):
            if ref is None:
                assert s.input_grads[i] is None, f"{name}: a const parent got a gradient at step {s.index}"
            else:
                close(s.input_grads[i], ref.numpy(), f"{name}: step {s.index} ({s.name}) -> parent {i}")


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_leaf_totals_are_backward_and_torch(built):
    name, stepper, tfn, values = built
    backward = stepper.leaf_grads()
    ref = torch_leaf_grads(tfn, values)
    totals = {}
    leaf_of = {s.node: s.name for s in stepper.steps if s.op == "leaf"}
    for s in stepper.steps:
        for pid, gi in zip(s.parent_nodes, s.input_grads):
            if pid in leaf_of and gi is not None:
                totals[leaf_of[pid]] = totals.get(leaf_of[pid], 0) + gi.astype(np.float64)
    assert set(backward) == set(values)
    for k in values:
        close(totals[k], backward[k], f"{name}: the steps' contributions to {k} add up to backward()'s")
        close(backward[k].reshape(ref[k].shape), ref[k], f"{name}: backward()'s gradient of {k} is torch's")
        leaf_step = next(s for s in stepper.steps if s.op == "leaf" and s.name == k)
        close(leaf_step.output_grad, backward[k], f"{name}: the leaf step of {k} shows backward()'s gradient")


def test_leaf_totals_against_finite_differences():
    # The reference where torch is missing: central differences in float64.
    stepper = BackwardStepper(neuron, **NEURON)
    grads = stepper.leaf_grads()
    for k, v in NEURON.items():
        h = 1e-6
        hi = dict(NEURON, **{k: v + h})
        lo = dict(NEURON, **{k: v - h})
        fd = (np.tanh(hi["x1"] * hi["w1"] + hi["x2"] * hi["w2"] + hi["b"])
              - np.tanh(lo["x1"] * lo["w1"] + lo["x2"] * lo["w2"] + lo["b"])) / (2 * h)
        assert abs(float(grads[k][0]) - fd) < 1e-5, (k, grads[k], fd)


def test_a_node_used_twice_gets_two_contributions_summed():
    fn, _, values = case("shared")
    stepper = BackwardStepper(fn, **values)
    a = next(s for s in stepper.steps if s.op == "mul" and set(s.parents) == {"x", "w"})
    assert len(a.incoming) >= 3   # from mul(a, exp a) (as a), from exp(a), from sigmoid(a)
    total = sum(g.astype(np.float64) for _, g in a.incoming)
    close(a.output_grad, total, "the contributions to a add up to what arrives")
    assert " + " in a.formula and "g = " in a.formula
    # Each contribution comes from a step the engine ran before this one.
    assert all(k < a.index for k, _ in a.incoming)


# -- the record and the formulas ------------------------------------------------------------------------

def test_neuron_steps_and_formulas():
    s = BackwardStepper(neuron, **NEURON)
    assert [st.op for st in s.steps][0] == "tanh"
    assert len(s.steps) == 10 and len(s.nodes) == 10
    assert s.current.index == 0
    assert s.steps[0].formula.startswith("seed: ")
    mul = next(st for st in s.steps if st.op == "mul" and st.parents == ("x1", "w1"))
    assert mul.formula == "d(x1*w1)/dx1 = w1 = -3.0; 0.5 x -3.0 = -1.5 | d(x1*w1)/dw1 = x1 = 2.0; 0.5 x 2.0 = 1.0"
    add = next(st for st in s.steps if st.op == "add" and "b" in st.parents)
    assert add.parents == ("add", "b") and add.parent_names == ("add1", "b")
    tanh = s.steps[0]
    assert "1-tanh(add2)^2 = 0.5" in tanh.formula
    grads = s.leaf_grads()
    close(grads["x1"], [-1.5], "x1") and close(grads["w1"], [1.0], "w1")
    close(grads["w2"], [0.0], "w2")


def test_formulas_for_tensors_show_shapes():
    fn, _, values = case("linear_ce")
    s = BackwardStepper(fn, **values)
    matmul = next(st for st in s.steps if st.op == "matmul")
    assert "g @ w^T: [4, 5] @ [5, 3] -> [4, 3]" in matmul.formula
    assert "x^T @ g: [3, 4] @ [4, 5] -> [3, 5]" in matmul.formula
    assert "<4x3: " in matmul.formula
    gather = next(st for st in s.steps if st.op == "gather")
    assert "scattered" in gather.formula and "[4, 5]" in gather.formula
    fn, _, values = case("conv")
    conv = next(st for st in BackwardStepper(fn, **values).steps if st.op == "conv2d")
    assert "conv_transpose2d(g, w)" in conv.formula and "[3, 2, 3, 3]" in conv.formula
    assert format_array(np.arange(12.0).reshape(3, 4)) == "<3x4: 0.0, 1.0, ..., 11.0>"
    assert format_array(np.array([[1.0, 2.0], [3.0, 4.5]])) == "[[1.0, 2.0], [3.0, 4.5]]"


def test_an_op_without_a_template_still_shows_its_numbers():
    s = BackwardStepper(lambda x: x.cos().sum().mul_scalar(2.0).clamp(-9.0, 9.0).cos().sum(), x=[0.3, 0.4])
    assert all(st.formula and "\n" not in st.formula for st in s.steps)
    st = next(st for st in s.steps if st.op == "clamp")
    assert "d(clamp(" in st.formula


def test_moving():
    s = BackwardStepper(neuron, **NEURON)
    assert s.step().index == 1 and s.current.index == 1
    assert s.back().index == 0 and s.back().index == 0
    assert s.goto(-1).index == len(s.steps) - 1
    assert s.step().index == len(s.steps) - 1
    assert s.slider.value == len(s.steps) - 1
    s.slider.value = 3
    assert s.current.index == 3
    s.next_button.click()
    assert s.current.index == 4
    s.prev_button.click()
    assert s.current.index == 3
    with pytest.raises(IndexError, match="out of range; there are 10 steps"):
        s.goto(10)
    with pytest.raises(TypeError, match="integer"):
        s.goto(1.5)


# -- set_input ---------------------------------------------------------------------------------------------

@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_set_input_recomputes_as_torch_does():
    s = BackwardStepper(neuron, **NEURON)
    s.goto(7)
    s.set_input("x2", 1.5)
    assert s.current.index == 7
    values = dict(NEURON, x2=1.5)
    ref = torch_leaf_grads(neuron, values)
    for k, g in s.leaf_grads().items():
        close(g.reshape(()), ref[k], f"gradient of {k} after set_input")
    assert s.boxes["x2"].value == 1.5
    s.boxes["w1"].value = -4.0      # the number box calls set_input
    ref = torch_leaf_grads(neuron, dict(values, w1=-4.0))
    for k, g in s.leaf_grads().items():
        close(g.reshape(()), ref[k], f"gradient of {k} after editing the w1 box")
    assert s.inputs["w1"][0] == -4.0
    fn, tfn, values = case("linear_ce")
    s = BackwardStepper(fn, **values)
    new_w = np.linspace(-1, 1, 15).reshape(3, 5)
    s.set_input("w", new_w)
    ref = torch_leaf_grads(tfn, dict(values, w=new_w))
    for k, g in s.leaf_grads().items():
        close(g, ref[k], f"linear_ce: gradient of {k} after set_input")
    arriving = torch_arriving(s, tfn, dict(values, w=new_w))
    for st in s.steps:
        close(st.output_grad, arriving[st.node].reshape(st.output_grad.shape), f"step {st.index} after set_input")


def test_a_captured_parameter_is_a_leaf_with_its_value():
    from burnbook import nn

    B.seed(0)
    lin = nn.LinearConfig(3, 2).init(backend=B)
    s = BackwardStepper(lambda x: lin.forward(x).tanh().sum(), x=[[1.0, 2.0, 3.0]])
    weight = next(st for st in s.steps if st.op == "leaf" and st.shape == (3, 2))
    assert weight.name.startswith("leaf")
    close(weight.value, lin.weight.val().to_numpy(), "the weight's value, from the matmul's saved state")
    matmul = next(st for st in s.steps if st.op == "matmul")
    assert f"g @ {weight.name}^T: [1, 2] @ [2, 3] -> [1, 3]" in matmul.formula
    assert "x" in s.leaf_grads() and len(s.leaf_grads()) == 1


def test_tensor_inputs_keep_their_backend():
    x = Tensor[B, 1].from_floats([1.0, 2.0])
    s = BackwardStepper(lambda x, y: (x * y).sum(), x=x, y=Tensor[B, 1].from_floats([3.0, -1.0]))
    close(s.leaf_grads()["x"], [3.0, -1.0], "x") and close(s.leaf_grads()["y"], [1.0, 2.0], "y")


def test_the_same_steps_on_taichi():
    pytest.importorskip("taichi")
    from burnbook.backend import Taichi

    T = Autodiff[Taichi]
    values = inputs()["shared"]
    on_ndarray = BackwardStepper(shared, **values)
    on_taichi = BackwardStepper(shared, **{k: Tensor[T, 1].from_data(v) for k, v in values.items()})
    assert [s.op for s in on_taichi.steps] == [s.op for s in on_ndarray.steps]
    for a, b in zip(on_taichi.steps, on_ndarray.steps):
        close(a.output_grad, b.output_grad, f"Taichi step {a.index} ({a.name})")
        for ga, gb in zip(a.input_grads, b.input_grads):
            assert (ga is None) == (gb is None)
            if ga is not None:
                close(ga, gb, f"Taichi step {a.index} ({a.name}) -> a parent")


# -- the view ------------------------------------------------------------------------------------------------

def test_figure_colours_visited_nodes_and_rings_the_current_one():
    s = BackwardStepper(neuron, **NEURON)
    s.goto(3)
    fig = s.figure()
    names = [t.name for t in fig.data]
    assert names == ["edges", "sent", "nodes", "current"]
    nodes = fig.data[2]
    visited = {st.node for st in s.steps[:4]}
    for n, c in zip(s.nodes, nodes.marker.color):
        assert (c == "#2ca02c") == (n.id in visited)
    cur = fig.data[3]
    x, y = s.positions[s.current.node]
    assert (cur.x[0], cur.y[0]) == (x, y)
    # the current node (add1) sends along its two parent edges
    assert len([v for v in fig.data[1].x if v is None]) == 2
    assert "add1" in fig.layout.title.text
    html = s.info_html()
    assert "gradient in" in html and "to mul1" in html and "d(mul1+mul2)/dmul1" in html
    assert "class='bb-step-rule'" in html   # where a browser reads the formula shown
    assert "step 3/9: add1 (add)" in s.summary()


def test_static_figure_is_the_final_state_with_every_formula():
    s = BackwardStepper(neuron, **NEURON)
    fig = s.static_figure()
    assert all(c == "#2ca02c" for c in fig.data[2].marker.color)
    caption = fig.layout.annotations[-1].text
    for st in s.steps:
        assert f"{st.index}. {st.name}:" in caption
    bundle = s._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "BackwardStepper: 10 steps" in bundle["text/plain"]


def test_static_figure_renders(real_png):
    fn, _, values = case("linear_ce")
    s = BackwardStepper(fn, **values)
    bundle = s._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "image/png" in data
    import base64
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


# -- garbage in ----------------------------------------------------------------------------------------------

def test_clear_errors():
    with pytest.raises(TypeError, match="fn must be a function"):
        BackwardStepper(3, x=1.0)
    with pytest.raises(ValueError, match="give the inputs as keywords"):
        BackwardStepper(lambda: None)
    with pytest.raises(TypeError, match="no parameter \\['z'\\]"):
        BackwardStepper(lambda x: x.sum(), x=1.0, z=2.0)
    with pytest.raises(TypeError, match="missing \\['y'\\]"):
        BackwardStepper(lambda x, y: x.sum(), x=1.0)
    with pytest.raises(TypeError, match="input 'x' must be a number"):
        BackwardStepper(lambda x: x.sum(), x="abc")
    with pytest.raises(TypeError, match="records no graph"):
        BackwardStepper(lambda x: x.sum(), x=Tensor[NdArray, 1].from_floats([1.0]))
    with pytest.raises(TypeError, match="only Float"):
        BackwardStepper(lambda x: x.sum(), x=Tensor[B, 1, Int].from_ints([1]))
    with pytest.raises(ValueError, match="must return a scalar.*\\[2\\]"):
        BackwardStepper(lambda x: x * 2.0, x=[1.0, 2.0])
    with pytest.raises(TypeError, match="must return a tensor"):
        BackwardStepper(lambda x: 3.0, x=1.0)
    with pytest.raises(ValueError, match="does not depend on any input"):
        BackwardStepper(lambda x: x.detach().sum(), x=1.0)
    s = BackwardStepper(neuron, **NEURON)
    with pytest.raises(KeyError, match="no input 'q'"):
        s.set_input("q", 1.0)
    with pytest.raises(ValueError, match="shape \\[1\\], got values of shape \\[2\\]"):
        s.set_input("x1", [1.0, 2.0])
    with pytest.raises(TypeError, match="must be numbers"):
        s.set_input("x1", "two")
    checked = BackwardStepper(lambda x: x.log().sum() if float(x.to_numpy()[0]) > 0 else None, x=2.0)
    with pytest.raises(TypeError, match="must return a tensor"):
        checked.set_input("x", -1.0)
    assert checked.inputs["x"][0] == 2.0 and checked.leaf_grads()["x"][0] == 0.5
