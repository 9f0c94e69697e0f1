"""Chapter 27's checks accept a right engine part and refuse the skeleton and
the typical wrong ones: a record that always keeps a node, a breadth-first
order, a rule missing a factor, a transposed matmul gradient, a sum that
forgets the shape, a backward that overwrites instead of adding up."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.backend import NdArray
from burnbook.book import exercises
from burnbook.book.tiny_autodiff import Var, make_engine

ex = exercises("27")


def _skeleton(*args):
    raise NotImplementedError("your code: ...")


# -- right answers, written here with NumPy (NdArray's primitives are arrays) --------------------
def record(op, value, inputs, rule, args=()):
    if any(v.requires_grad or v.parents for v in inputs):
        return Var(value, op=op, parents=tuple(inputs), rule=rule, args=tuple(args))
    return Var(value)


def topo_recursive(root):
    order, seen = [], set()

    def visit(node):
        if node.id in seen:
            return
        seen.add(node.id)
        for p in node.parents:
            visit(p)
        order.append(node)
    visit(root)
    return order[::-1]


def _sum_to(B, g, shape):
    for dim, n in enumerate(shape):
        if n == 1 and B.float_shape(g)[dim] != 1:
            g = B.float_sum_dim(g, dim)
    return g


def _mt(B, p):
    rank = len(B.float_shape(p))
    return B.float_swap_dims(p, rank - 1, rank - 2)


def _sh(B, p):
    return tuple(B.float_shape(p))


# written with the protocol's ops only, as the chapter asks (the check runs them on opaque primitives)
RULES = {
    "float_add": lambda B, g, xs, out, args: (_sum_to(B, g, _sh(B, xs[0])), _sum_to(B, g, _sh(B, xs[1]))),
    "float_sub": lambda B, g, xs, out, args: (_sum_to(B, g, _sh(B, xs[0])),
                                              _sum_to(B, B.float_mul_scalar(g, -1.0), _sh(B, xs[1]))),
    "float_mul": lambda B, g, xs, out, args: (_sum_to(B, B.float_mul(xs[1], g), _sh(B, xs[0])),
                                              _sum_to(B, B.float_mul(xs[0], g), _sh(B, xs[1]))),
    "float_neg": lambda B, g, xs, out, args: (B.float_mul_scalar(g, -1.0),),
    "float_mul_scalar": lambda B, g, xs, out, args: (B.float_mul_scalar(g, args[0]),),
    "float_exp": lambda B, g, xs, out, args: (B.float_mul(g, B.float_exp(xs[0])),),
    "float_tanh": lambda B, g, xs, out, args: (
        B.float_div(g, B.float_powf_scalar(B.float_div_scalar(B.float_add(B.float_exp(xs[0]),
                                                                           B.float_exp(B.float_neg(xs[0]))), 2.0),
                                           2.0)),),
    "float_relu": lambda B, g, xs, out, args: (B.float_mul(g, B.bool_into_float(B.float_greater_elem(xs[0], 0.0))),),
    "float_matmul": lambda B, g, xs, out, args: (_sum_to(B, B.float_matmul(g, _mt(B, xs[1])), _sh(B, xs[0])),
                                                 _sum_to(B, B.float_matmul(_mt(B, xs[0]), g), _sh(B, xs[1]))),
    "float_sum": lambda B, g, xs, out, args: (
        B.float_mul(B.float_full(_sh(B, xs[0]), 1.0, B.float_device(g), B.float_dtype(g)),
                    B.float_reshape(g, (1,) * len(_sh(B, xs[0])))),),
    "float_sum_dim": lambda B, g, xs, out, args: (B.float_expand(g, _sh(B, xs[0])),),
    "float_div": lambda B, g, xs, out, args: (
        _sum_to(B, B.float_div(g, xs[1]), _sh(B, xs[0])),
        _sum_to(B, B.float_neg(B.float_div(B.float_mul(g, xs[0]), B.float_mul(xs[1], xs[1]))), _sh(B, xs[1]))),
    "float_log": lambda B, g, xs, out, args: (B.float_mul(g, B.float_recip(xs[0])),),
}
NUMPY_RULES = {   # right numbers, but computed with NumPy instead of B's ops
    "float_mul": lambda B, g, xs, out, args: (g * xs[1], g * xs[0]),
    "float_matmul": lambda B, g, xs, out, args: (g @ np.swapaxes(xs[1], -1, -2), np.swapaxes(xs[0], -1, -2) @ g),
}


def backward(nodes, B, accumulate=True):
    grads = {nodes[0].id: np.ones_like(nodes[0].value)}
    for node in nodes:
        if node.id not in grads or not node.parents:
            continue
        out = node.rule(B, grads[node.id], tuple(p.value for p in node.parents), node.value, node.args)
        for parent, g in zip(node.parents, out):
            grads[parent.id] = grads[parent.id] + g if accumulate and parent.id in grads else g
    return {n.id: grads[n.id] for n in nodes if n.requires_grad and n.id in grads}


def _with(op, rule):
    return {**RULES, op: rule}


# -- the right answers pass ---------------------------------------------------------------------
@pytest.mark.parametrize("n, answer", [(1, record), (2, topo_recursive), (3, RULES), (4, RULES),
                                       (5, backward), (6, RULES)])
def test_right_answers_pass(n, answer):
    verdict = ex[n].verdict(answer)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("n, answer", [(1, _skeleton), (2, _skeleton), (3, {k: _skeleton for k in RULES}),
                                       (4, {k: _skeleton for k in RULES}), (5, _skeleton),
                                       (6, {k: _skeleton for k in RULES})])
def test_the_skeleton_is_refused_in_words(n, answer):
    message = ex[n].verdict(answer).message
    assert message.startswith("not yet:") and "raised NotImplementedError" in message
    assert "your code: ..." in message and "Traceback" not in message


# -- exercise 1 -----------------------------------------------------------------------------------
def test_record_that_always_keeps_a_node_is_refused():
    def always(op, value, inputs, rule, args=()):
        return Var(value, op=op, parents=tuple(inputs), rule=rule, args=tuple(args))
    assert "keep no state" in ex[1].verdict(always).message


def test_record_that_drops_untracked_parents_or_args_is_refused():
    def tracked_only(op, value, inputs, rule, args=()):
        kept = tuple(v for v in inputs if v.tracked)
        return Var(value, op=op, parents=kept, rule=rule, args=tuple(args)) if kept else Var(value)

    def no_args(op, value, inputs, rule, args=()):
        return record(op, value, inputs, rule, ())
    assert "the op's inputs, all of them, in order" in ex[1].verdict(tracked_only).message
    assert "other arguments" in ex[1].verdict(no_args).message
    assert "return a Var" in ex[1].verdict(lambda *a: a[1]).message


# -- exercise 2 -----------------------------------------------------------------------------------
def test_breadth_first_and_duplicates_are_refused():
    def bfs(root):
        order, seen, queue = [], set(), [root]
        while queue:
            node = queue.pop(0)
            if node.id not in seen:
                seen.add(node.id)
                order.append(node)
                queue.extend(node.parents)
        return order

    def no_seen(root):
        order, stack = [], [root]
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(node.parents)
        return order
    assert "before the share from" in ex[2].verdict(bfs).message
    assert "twice" in ex[2].verdict(no_seen).message
    assert "does not start at the root" in ex[2].verdict(lambda r: topo_recursive(r)[::-1]).message


# -- exercises 3, 4, 6 ----------------------------------------------------------------------------
def test_rules_missing_a_factor_or_a_sum_back_are_refused():
    no_factor = _with("float_mul", lambda B, g, xs, out, args: (g, g))
    no_sum_back = _with("float_add", lambda B, g, xs, out, args: (g, g))
    scalar_ignored = _with("float_mul_scalar", lambda B, g, xs, out, args: (g,))
    assert "float_mul rule" in ex[3].verdict(no_factor).message
    message = ex[3].verdict(no_sum_back).message
    assert "float_add rule" in message and "has shape [2, 3], where the answer has shape [1, 3]" in message
    assert "off everywhere by the same factor" in ex[3].verdict(scalar_ignored).message
    missing = {k: v for k, v in RULES.items() if k != "float_tanh"}
    assert "no rule for 'float_tanh'" in ex[3].verdict(missing).message


def test_a_transposed_matmul_gradient_and_a_flat_sum_are_refused():
    transposed = _with("float_matmul", lambda B, g, xs, out, args: (
        B.float_swap_dims(B.float_matmul(g, B.float_swap_dims(xs[1], 0, 1)), 0, 1),
        B.float_matmul(B.float_swap_dims(xs[0], 0, 1), g)))
    flat = _with("float_sum", lambda B, g, xs, out, args: (np.full((int(np.prod(xs[0].shape)),), g[0]),))
    one_output = _with("float_sum_dim", lambda B, g, xs, out, args: g)
    assert "(it looks transposed)" in ex[4].verdict(transposed).message
    assert "float_sum rule" in ex[4].verdict(flat).message
    assert "float_sum_dim rule returned an array" in ex[4].verdict(one_output).message


def test_rules_that_compute_with_numpy_are_refused():
    for n, op in ((3, "float_mul"), (4, "float_matmul")):
        message = ex[n].verdict(_with(op, NUMPY_RULES[op])).message
        assert f"your {op} rule raised" in message and "given B's primitives" in message
        assert "should call B's ops" in message


def test_div_with_the_wrong_sign_is_refused():
    wrong_sign = _with("float_div", lambda B, g, xs, out, args: (g / xs[1], g * xs[0] / xs[1] ** 2))
    assert "float_div rule" in ex[6].verdict(wrong_sign).message
    assert "no rule for 'float_div'" in ex[6].verdict({k: v for k, v in RULES.items()
                                                       if k != "float_div"}).message


# -- exercise 5 -----------------------------------------------------------------------------------
def test_backward_that_overwrites_or_seeds_zeros_is_refused():
    def overwrite(nodes, B):
        return backward(nodes, B, accumulate=False)

    def zeros_seed(nodes, B):
        out = backward(nodes, B)
        return {k: v * 0.0 for k, v in out.items()}
    assert "the gradient of a on sum(a * b + a)" in ex[5].verdict(overwrite).message
    assert "the gradient of a" in ex[5].verdict(zeros_seed).message
    assert "return a dict" in ex[5].verdict(lambda nodes, B: [1.0]).message


# -- the engine made of these parts is a backend ------------------------------------------------------
def test_an_engine_of_right_parts_matches_autodiff():
    from burnbook import Tensor
    from burnbook.backend import Autodiff
    B = make_engine(record, topo_recursive, RULES, backward)[NdArray]
    assert repr(B) == "Tiny[NdArray]" and B.is_autodiff and B.InnerBackend is NdArray
    assert "float_cos" in B.missing_ops() and "float_tanh" not in B.missing_ops()
    results = []
    for backend in (B, Autodiff[NdArray]):
        x = Tensor[backend, 2].from_data(np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)).require_grad()
        w = Tensor[backend, 2].from_data(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)).require_grad()
        y = (x.matmul(w).tanh() * x + x).sum()
        grads = y.backward()
        results.append((x.grad(grads).to_numpy(), w.grad(grads).to_numpy()))
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
