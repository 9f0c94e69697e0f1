"""Checks for chapter 27, Build your own autodiff.

The reader's parts are judged one at a time, each on its own, so a wrong
`record` never shows up as a wrong rule:

- `record` on Vars made here (tracked, untracked, an op's output);
- `topo_order` on graphs built here by hand, one of them the graph a
  breadth-first walk gets wrong, one deeper than the chapter's;
- each rule called directly, `rule(NdArray, g, xs, out, args)`, against the
  vector-Jacobian product burnbook's own `Autodiff[NdArray]` computes;
- `backward` on node lists built here (with rules written here), against
  gradients in closed form.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from burnbook.backend import Autodiff, NdArray
from burnbook.backend.base import FLOAT_OPS
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.book.tiny_autodiff import ELEMENTWISE_OPS, EXTRA_OPS, SHAPE_OPS, Var

TITLE = "Build your own autodiff"
_F32 = np.float32


def _rule_stub(B, g, xs, out, args):
    return (g,) * len(xs)


# -- exercise 1: record ---------------------------------------------------------------------------
def _record(answer) -> str | None:
    value = np.arange(3, dtype=_F32)
    x, u = Var(np.ones(3, _F32), requires_grad=True), Var(np.ones(3, _F32))
    calls = (("float_mul", (x, u), (), "a tracked leaf and an untracked Var"),
             ("float_add", (u, x), (), "an untracked Var and a tracked leaf"),
             ("float_mul_scalar", None, (2.5,), "the output of a tracked op, and the scalar 2.5"),
             ("float_exp", (u,), (), "one untracked Var"),
             ("float_add", (u, Var(np.zeros(3, _F32))), (), "two untracked Vars"))
    made = []
    for op, inputs, args, words in calls:
        inputs = inputs if inputs is not None else (made[0],)
        on = f"on {words}"
        out = call_reader(answer, op, value, inputs, _rule_stub, args, what="your record", on=on)
        if not isinstance(out, Var):
            return f"your record returned {describe(out)} {on}; return a Var (the class the chapter gives)"
        if out.value is not value:
            return f"the Var your record returned {on} does not hold the value it was given"
        if out.requires_grad:
            return (f"the Var your record returned {on} requires grad: only leaves the reader marks do; "
                    "an op's output is tracked through its parents")
        tracked = any(v.tracked for v in inputs)
        if not tracked:
            if out.parents or out.rule is not None or tuple(out.args):
                return (f"your record keeps parents, a rule or args {on}: with no tracked input nothing "
                        "can flow back, so the output should keep no state (an untracked Var)")
        else:
            if not isinstance(out.parents, tuple) or len(out.parents) != len(inputs) \
                    or any(p is not v for p, v in zip(out.parents, inputs)):
                return (f"the parents your record kept {on} are not the op's inputs, all of them, in order "
                        "(one per input, so the rule's i-th gradient goes to the i-th parent)")
            if out.op != op:
                return f"your record labelled the op {out.op!r} {on}, where the op's name was passed"
            if out.rule is not _rule_stub:
                return f"the Var your record returned {on} does not keep the rule it was given"
            if tuple(out.args) != tuple(args):
                return f"the Var your record returned {on} does not keep the op's other arguments (args)"
        made.append(out)
    if len({v.id for v in made}) != len(made):
        return "two Vars your record returned share an id: make a new Var for each op (ids key the gradients)"
    return None


# -- exercise 2: topo_order -----------------------------------------------------------------------
def _node(op: str, *parents: Var, grad: bool = False) -> Var:
    return Var(None, op=op, parents=parents, requires_grad=grad)


def _graphs() -> list:
    """(words, root, nodes) for each graph; nodes maps id -> node."""
    out = []
    a, b = _node("a", grad=True), _node("b", grad=True)
    ab = _node("a * b", a, b)
    out.append(("sum(a * b + a)", _node("sum", _node("a * b + a", ab, a))))
    x = _node("x", grad=True)
    out.append(("x * x", _node("x * x", x, x)))
    c = _node("c = exp(x)", _node("x", grad=True))
    b2 = _node("b = tanh(c)", c)
    a2 = _node("a = relu(b)", b2)
    out.append(("r = a + c, a = relu(tanh(c)), c = exp(x)", _node("r = a + c", a2, c)))
    u, w = Var(None), _node("w", grad=True)
    out.append(("w * u, u untracked", _node("sum", _node("w * u", w, u))))
    node = _node("x0", grad=True)
    for i in range(1, 300):
        node = _node(f"x{i} = exp(x{i - 1})", node)
    out.append(("a chain of 300 ops", node))
    leaf = _node("p", grad=True)
    parts = [_node(f"q{i} = p * {i}", leaf) for i in range(40)]
    total = parts[0]
    for i, q in enumerate(parts[1:], 1):
        total = _node(f"s{i}", total, q)
    out.append(("p used by 40 ops summed together", total))
    return out


def _reachable(root: Var) -> dict:
    seen, stack = {}, [root]
    while stack:
        node = stack.pop()
        if node.id not in seen:
            seen[node.id] = node
            stack.extend(node.parents)
    return seen


def _topo(answer) -> str | None:
    for words, root in _graphs():
        on = f"on the graph {words}"
        got = call_reader(answer, root, what="your topo_order", on=on)
        if not isinstance(got, (list, tuple)):
            return f"your topo_order returned {describe(got)} {on}; return a list of the nodes"
        nodes = _reachable(root)
        position = {}
        for i, node in enumerate(got):
            if not isinstance(node, Var) or nodes.get(node.id) is not node:
                return f"your topo_order's list {on} holds {describe(node)}, which is not a node of the graph"
            if node.id in position:
                return (f"your topo_order lists the node {node.op!r} twice {on}: a node reached by two "
                        "paths must appear once (remember which nodes you have visited)")
            position[node.id] = i
        lost = [n for n in nodes.values() if n.tracked and n.id not in position]
        if lost:
            return f"your topo_order misses the node {lost[0].op!r} {on}, which the root depends on"
        if got and got[0] is not root:
            return f"your topo_order does not start at the root {on} (backward starts from there)"
        for node in got:
            for parent in node.parents:
                if parent.id in position and position[parent.id] < position[node.id]:
                    return (f"your topo_order puts {parent.op!r} before {node.op!r} {on}, though {node.op!r} "
                            f"uses {parent.op!r}: backward would pass on the gradient of {parent.op!r} "
                            f"before the share from {node.op!r} has arrived")
    return None


# -- exercises 3, 4, 6: the rules ---------------------------------------------------------------------
def _u(rng, *shape):
    return rng.uniform(-2.0, 2.0, shape).astype(_F32)


def _away(rng, *shape):
    return (rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(_F32)


def _pos(rng, *shape):
    return rng.uniform(0.5, 3.0, shape).astype(_F32)


_BINARY = [lambda r: ((_u(r, 2, 3), _u(r, 2, 3)), ()), lambda r: ((_u(r, 2, 3), _u(r, 1, 3)), ()),
           lambda r: ((_u(r, 3, 1), _u(r, 1, 4)), ())]
_UNARY = [lambda r: ((_u(r, 2, 3),), ()), lambda r: ((_u(r, 5),), ())]
_CASES = {
    "float_add": _BINARY, "float_sub": _BINARY, "float_mul": _BINARY, "float_neg": _UNARY,
    "float_exp": _UNARY, "float_tanh": _UNARY,
    "float_mul_scalar": [lambda r: ((_u(r, 2, 3),), (2.5,)), lambda r: ((_u(r, 4),), (-0.5,))],
    "float_relu": [lambda r: ((_away(r, 2, 3),), ()), lambda r: ((_away(r, 6),), ())],
    "float_matmul": [lambda r: ((_u(r, 2, 3), _u(r, 3, 4)), ()), lambda r: ((_u(r, 3, 2), _u(r, 2, 5)), ()),
                     lambda r: ((_u(r, 2, 2, 3), _u(r, 2, 3, 2)), ())],
    "float_sum": [lambda r: ((_u(r, 2, 3),), ()), lambda r: ((_u(r, 4),), ()), lambda r: ((_u(r, 2, 1, 3),), ())],
    "float_sum_dim": [lambda r: ((_u(r, 2, 3),), (1,)), lambda r: ((_u(r, 2, 3, 4),), (0,)),
                      lambda r: ((_u(r, 2, 3, 4),), (2,))],
    "float_div": [lambda r: ((_u(r, 2, 3), _away(r, 2, 3)), ()), lambda r: ((_u(r, 2, 3), _away(r, 1, 3)), ())],
    "float_log": [lambda r: ((_pos(r, 2, 3),), ()), lambda r: ((_pos(r, 5),), ())],
}


def _vjp(op: str, arrays: tuple, args: tuple, g: np.ndarray) -> list:
    """The gradients of sum(op(*arrays, *args) * g) with respect to each
    array, from burnbook's own Autodiff[NdArray]."""
    A = Autodiff[NdArray]
    device = A.default_device()
    ps = [A.float_require_grad(A.float_from_data(a.copy(), device)) for a in arrays]
    out = getattr(A, op)(*ps, *args)
    grads = A.float_backward(A.float_sum(A.float_mul(out, A.float_from_data(g, device))))
    return [np.asarray(A.float_grad(p, grads)) for p in ps]


class OpaquePrimitive:
    """An opaque primitive: only the backend's own ops can open it, so a rule
    that computes with NumPy (`g * xs[1]`) instead of B's ops shows itself."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __repr__(self) -> str:
        return f"<a primitive of shape {list(self.array.shape)}>"


def _boxed(fn):
    def unbox(a):
        return a.array if isinstance(a, OpaquePrimitive) else [unbox(x) for x in a] if isinstance(a, list) else a

    def op(*args):
        out = fn(*[unbox(a) for a in args])
        return OpaquePrimitive(out) if isinstance(out, np.ndarray) and out.dtype.kind == "f" else out
    return staticmethod(op)


# NdArray with every Float op behind the opaque box (Int and Bool results stay arrays)
_Opaque = type("Opaque", (NdArray,), {name: _boxed(getattr(NdArray, name)) for name in FLOAT_OPS
                                      if name not in ("float_into_data",)})


def _through_the_protocol(op: str, rule, arrays: tuple, args: tuple, g: np.ndarray, on: str) -> str | None:
    """Run `rule` on opaque primitives: None when it used only B's ops."""
    xs = tuple(OpaquePrimitive(a.copy()) for a in arrays)
    out = OpaquePrimitive(np.asarray(getattr(NdArray, op)(*arrays, *args)))
    got = call_reader(rule, _Opaque, OpaquePrimitive(g.copy()), xs, out, args, what=f"your {op} rule",
                      on=f"{on}, given B's primitives rather than NumPy arrays")
    if not isinstance(got, (tuple, list)) or not all(isinstance(x, OpaquePrimitive) for x in got):
        return (f"your {op} rule returns {describe(got)} when B's primitives are not NumPy arrays: "
                "write it with B's ops (B.float_mul, B.float_neg...) so it runs on any backend")
    return None


def _rules(answer, ops: tuple) -> str | None:
    if not isinstance(answer, Mapping):
        raise AnswerError(f"your answer is {describe(answer)}; pass the dict RULES, {{op name: rule}}")
    for op in ops:
        rule = answer.get(op)
        if rule is None:
            return f"RULES has no rule for {op!r}"
        for i, build in enumerate(_CASES[op]):
            arrays, args = build(np.random.default_rng(1000 + 17 * i + len(op)))
            out = np.asarray(getattr(NdArray, op)(*arrays, *args))
            g = np.random.default_rng(7 + i).uniform(-1.0, 1.0, out.shape).astype(_F32)
            shapes = ", ".join(str(list(a.shape)) for a in arrays)
            on = f"on inputs {shapes}" + (f" with {args[0]!r}" if args else "") + \
                 ("" if i == 0 else f" (case {i + 1} of {len(_CASES[op])})")
            got = call_reader(rule, NdArray, g.copy(), tuple(a.copy() for a in arrays), out.copy(), args,
                              what=f"your {op} rule", on=on)
            if not isinstance(got, (tuple, list)):
                return (f"your {op} rule returned {describe(got)} {on}; return a tuple with one gradient "
                        f"per input ({len(arrays)} here)")
            if len(got) != len(arrays):
                return f"your {op} rule returned {len(got)} gradients {on}, one per input makes {len(arrays)}"
            for k, (mine, right) in enumerate(zip(got, _vjp(op, arrays, args, g))):
                which = f"the gradient for input {k + 1}" if len(arrays) > 1 else "the gradient"
                problem = compare(mine, right, f"{which} of your {op} rule {on}", rtol=1e-4, atol=1e-5)
                if problem:
                    return problem
            try:
                problem = _through_the_protocol(op, rule, arrays, args, g, on)
            except AnswerError as err:
                problem = (f"{err}. The rule computes with NumPy where it should call B's ops "
                           "(B.float_mul, B.float_neg...), which run on any backend")
            if problem:
                return problem
    return None


# -- exercise 5: backward -------------------------------------------------------------------------
def _mul(B, g, xs, out, args):
    return B.float_mul(g, xs[1]), B.float_mul(g, xs[0])


def _add(B, g, xs, out, args):
    return g, g


def _exp(B, g, xs, out, args):
    return (B.float_mul(g, out),)


def _sum(B, g, xs, out, args):
    return (B.float_expand(g, tuple(B.float_shape(xs[0]))),)


def _op(name: str, rule, *parents: Var) -> Var:
    B = NdArray
    values = [p.value for p in parents]
    value = {"mul": lambda: B.float_mul(*values), "add": lambda: B.float_add(*values),
             "exp": lambda: B.float_exp(*values), "sum": lambda: B.float_sum(*values)}[name]()
    return Var(value, op=f"float_{name}", parents=parents, rule=rule)


def _backward_cases() -> list:
    """(words, nodes root first, [(leaf name, leaf, expected gradient)])."""
    rng = np.random.default_rng(27)
    a = Var(_u(rng, 3), requires_grad=True)
    b = Var(_u(rng, 3), requires_grad=True)
    ab = _op("mul", _mul, a, b)
    s = _op("add", _add, ab, a)
    root = _op("sum", _sum, s)
    cases = [("sum(a * b + a)", [root, s, ab, a, b],
              [("a", a, b.value + 1.0), ("b", b, a.value)])]
    x = Var(_u(rng, 2, 3), requires_grad=True)
    cases.append(("x * x (a root of shape [2, 3]: the seed is ones of that shape)",
                  [_op("mul", _mul, x, x), x], [("x", x, 2.0 * x.value)]))
    p = Var(_u(rng, 4), requires_grad=True)
    w = Var(_u(rng, 4))
    e = _op("exp", _exp, p)
    pe = _op("mul", _mul, e, w)
    root = _op("sum", _sum, _op("add", _add, pe, p))
    cases.append(("sum(exp(p) * w + p), w untracked", [root, root.parents[0], pe, e, p, w],
                  [("p", p, np.exp(p.value) * w.value + 1.0)]))
    q = Var(_u(rng, 3), requires_grad=True)
    qq = _op("mul", _mul, q, q)
    t1 = _op("add", _add, q, qq)
    t2 = _op("add", _add, t1, q)
    root = _op("sum", _sum, t2)
    cases.append(("sum((q + q * q) + q)", [root, t2, t1, qq, q], [("q", q, 2.0 + 2.0 * q.value)]))
    return cases


def _backward(answer) -> str | None:
    for words, nodes, leaves in _backward_cases():
        on = f"on {words}"
        got = call_reader(answer, list(nodes), NdArray, what="your backward", on=on)
        if not isinstance(got, Mapping):
            return f"your backward returned {describe(got)} {on}; return a dict {{node id: gradient}}"
        for name, leaf, right in leaves:
            if leaf.id not in got:
                return f"the dict your backward returned {on} has no gradient for the leaf {name} (key {name}.id)"
            try:
                mine = as_array(got[leaf.id], f"the gradient of {name}")
            except AnswerError as err:
                return f"{err} {on}"
            problem = compare(mine, right, f"the gradient of {name} {on}", rtol=1e-4, atol=1e-5)
            if problem:
                return problem
    return None


EXERCISES = [
    Exercise("27", 1, "Record an op", _record,
             expects="your function record(op, value, inputs, rule, args)",
             hints=("An op's output needs a node only when some input is tracked (Var.tracked).",
                    "Tracked: Var(value, op=op, parents=inputs, rule=rule, args=args); else a plain Var(value).")),
    Exercise("27", 2, "A topological order", _topo,
             expects="your function topo_order(root) -> list of Vars",
             hints=("A node may be passed on only after every node that uses it: think of who uses whom.",
                    "A depth-first walk that appends a node after all its parents, then reversed, gives "
                    "that order; a set of visited ids keeps each node once.")),
    Exercise("27", 3, "Element-wise rules", lambda a: _rules(a, ELEMENTWISE_OPS),
             expects="the dict RULES with a rule for each of " + ", ".join(ELEMENTWISE_OPS),
             hints=("Each rule multiplies g by the op's local derivative, input by input, with B's ops.",
                    "An input broadcast from size 1 gets its gradient summed back: unbroadcast(B, g, shape).",
                    "tanh' = 1 - tanh^2 uses out; relu passes g where x > 0 and 0 elsewhere.")),
    Exercise("27", 4, "Rules that change shape", lambda a: _rules(a, SHAPE_OPS),
             expects="the dict RULES with a rule for each of " + ", ".join(SHAPE_OPS),
             hints=("Each gradient has the shape of its input: let the shapes tell you what to multiply.",
                    "For out = a @ b, which product of g with b, or with b's transpose, has a's shape? "
                    "A sum hands g back to every element it summed (float_expand).")),
    Exercise("27", 5, "The backward pass", _backward,
             expects="your function backward(nodes, B) -> dict {node id: gradient}",
             hints=("Seed the root (nodes[0]) with ones, then walk the nodes in order, calling each rule.",
                    "A parent used twice gets two gradients: add the new one to what is there.")),
    Exercise("27", 6, "Two more ops", lambda a: _rules(a, EXTRA_OPS),
             expects="the dict RULES with rules for float_div and float_log as well",
             hints=("Differentiate a / b by hand for each input (b appears in a denominator), and log(x) "
                    "for x; then write each as g times that, with B's ops.",
                    "A denominator broadcast from size 1 needs unbroadcast, as in add and mul.")),
]
