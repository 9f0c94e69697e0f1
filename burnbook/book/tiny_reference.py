"""The book's own answer to chapter 27's build: `record`, `topo_order`,
`RULES` and `backward`, the parts `burnbook.book.tiny_autodiff.make_engine`
assembles into a reverse-mode engine.

The chapter runs its demonstrations (the tape, the backward pass step by
step, training, `check_autodiff`) with the reader's part wherever that part
passes its check, and with this one where it does not yet, and says which;
the solutions notebook writes the same parts out in full. The checks
themselves (`burnbook/book/chapters/ch27.py`) never use this module: they
compare with burnbook's `Autodiff` and with hand-built graphs.
"""

from __future__ import annotations

from typing import Any, Callable

from .tiny_autodiff import Var, ones_like, unbroadcast

__all__ = ["RULES", "backward", "record", "topo_order"]


def record(op: str, value: Any, inputs: tuple, rule: Callable, args: tuple = ()) -> Var:
    """The output of op `op` as a Var: tracked (parents, rule, args kept)
    when any input is tracked, else a plain untracked Var that keeps nothing."""
    if not any(x.tracked for x in inputs):
        return Var(value)
    return Var(value, op=op, parents=tuple(inputs), rule=rule, args=tuple(args))


def topo_order(root: Var) -> list:
    """Every node reachable from `root`, root first, each before all of its
    parents (a reversed post-order of a depth-first walk, without recursion)."""
    seen, post, stack = set(), [], [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            post.append(node)
            continue
        if node.id in seen:
            continue
        seen.add(node.id)
        stack.append((node, True))
        stack.extend((p, False) for p in node.parents if p.id not in seen)
    return post[::-1]


def backward(nodes: list, B: type) -> dict:
    """Gradients of `nodes[0]` (seeded with ones) for every node that
    requires grad, by id: each node passes the gradient it has gathered
    through its rule, and a parent reached twice adds both."""
    grads = {nodes[0].id: ones_like(B, nodes[0].value)}
    for node in nodes:
        g = grads.get(node.id)
        if g is None or not node.parents:
            continue
        xs = tuple(p.value for p in node.parents)
        for parent, gp in zip(node.parents, node.rule(B, g, xs, node.value, node.args)):
            if parent.tracked:
                grads[parent.id] = gp if parent.id not in grads else B.float_add(grads[parent.id], gp)
    return {node.id: grads[node.id] for node in nodes if node.requires_grad and node.id in grads}


def _t(B: type, p: Any) -> Any:
    """The last two dims swapped (a matrix transposed, batch dims kept)."""
    rank = len(B.float_shape(p))
    return B.float_swap_dims(p, rank - 2, rank - 1)


def _shape(B: type, p: Any) -> tuple:
    return tuple(B.float_shape(p))


RULES: dict[str, Callable] = {
    "float_add": lambda B, g, xs, out, args: (unbroadcast(B, g, _shape(B, xs[0])),
                                              unbroadcast(B, g, _shape(B, xs[1]))),
    "float_sub": lambda B, g, xs, out, args: (unbroadcast(B, g, _shape(B, xs[0])),
                                              unbroadcast(B, B.float_neg(g), _shape(B, xs[1]))),
    "float_mul": lambda B, g, xs, out, args: (unbroadcast(B, B.float_mul(g, xs[1]), _shape(B, xs[0])),
                                              unbroadcast(B, B.float_mul(g, xs[0]), _shape(B, xs[1]))),
    "float_neg": lambda B, g, xs, out, args: (B.float_neg(g),),
    "float_mul_scalar": lambda B, g, xs, out, args: (B.float_mul_scalar(g, args[0]),),
    "float_exp": lambda B, g, xs, out, args: (B.float_mul(g, out),),
    "float_tanh": lambda B, g, xs, out, args: (
        B.float_mul(g, B.float_add_scalar(B.float_neg(B.float_mul(out, out)), 1.0)),),
    "float_relu": lambda B, g, xs, out, args: (B.float_mask_fill(g, B.float_lower_equal_elem(xs[0], 0.0), 0.0),),
    "float_matmul": lambda B, g, xs, out, args: (
        unbroadcast(B, B.float_matmul(g, _t(B, xs[1])), _shape(B, xs[0])),
        unbroadcast(B, B.float_matmul(_t(B, xs[0]), g), _shape(B, xs[1]))),
    "float_sum": lambda B, g, xs, out, args: (
        B.float_expand(B.float_reshape(g, (1,) * len(_shape(B, xs[0]))), _shape(B, xs[0])),),
    "float_sum_dim": lambda B, g, xs, out, args: (B.float_expand(g, _shape(B, xs[0])),),
    "float_div": lambda B, g, xs, out, args: (
        unbroadcast(B, B.float_div(g, xs[1]), _shape(B, xs[0])),
        unbroadcast(B, B.float_neg(B.float_div(B.float_mul(g, out), xs[1])), _shape(B, xs[1]))),
    "float_log": lambda B, g, xs, out, args: (B.float_div(g, xs[0]),),
}
