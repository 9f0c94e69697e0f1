"""Pattern fusion at import: multi-node chains that exporters write for one
activation become that activation's single ONNX node again.

PyTorch's exporters have no GELU operator below opset 20, so they write
`nn.GELU()` as the formula: exact GELU as Div(x, sqrt 2) -> Erf ->
Add(., 1) -> Mul(x, .) -> Mul(., 0.5) (the factors of the final product
in any grouping and order), tanh GELU as Pow(x, 3) or Mul(x, Mul(x, x)) ->
Mul(0.044715, .) -> Add(x, .) -> Mul(sqrt(2/pi), .) -> Tanh -> Add(., 1)
and the same product. Lowered node by node, each GELU costs five to eight
burnbook ops, each with its Python call overhead and a temporary array;
fused (as onnxruntime's graph optimiser does), it is one `Gelu` node and
the generated `forward` calls `activation.gelu` once.

A chain is fused only when it computes GELU exactly as written: every
constant equals the formula's (sqrt 2 or 1/sqrt 2, 1, 0.5, sqrt(2/pi),
0.044715, 3) within float32 rounding, and no other node reads any value
inside the chain (its last output may have any readers). Anything else
stays as the exporter wrote it and is lowered node by node.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..graph import Graph
from ..graph.subgraphs import with_subgraph_nodes

__all__ = ["fuse_patterns"]

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715


def fuse_patterns(graph: Graph) -> Graph:
    """`graph` with every GELU chain replaced by one `Gelu` node (in place;
    also returned). Runs after constant folding, so the constants a chain
    reads are known whether they came as initializers or `Constant` nodes;
    the `Constant` nodes left unread are dropped when the graph is lowered."""
    from onnx import helper

    chains = _Chains(graph)
    replaced: dict[int, Any] = {}  # id(last node of a chain) -> its Gelu node
    removed: set[int] = set()
    for node in graph.nodes:
        if node.domain not in ("", "ai.onnx") or node.op_type not in ("Erf", "Tanh"):
            continue
        found = chains.exact_gelu(node) if node.op_type == "Erf" else chains.tanh_gelu(node)
        if found is None:
            continue
        x, members, approximate = found
        if any(id(n) in removed for n in members) or not chains.keeps_shape(x, members):
            continue
        last = members[-1]
        replaced[id(last)] = helper.make_node("Gelu", [x], [last.output[0]], name=last.name or node.name,
                                              approximate=approximate)
        removed.update(id(n) for n in members)
    if replaced:
        graph.nodes = [replaced.get(id(n), n) for n in graph.nodes
                       if id(n) not in removed or id(n) in replaced]
    return graph


class _Chains:
    """Producers and readers of every value of one graph, and the matchers."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.producer: dict[str, Any] = {}
        self.users: dict[str, list] = {}  # value -> the top-level nodes reading it
        for node in graph.nodes:
            for out in node.output:
                if out:
                    self.producer[out] = node
            for name in node.input:
                if name:
                    self.users.setdefault(name, []).append(node)
        self.readers: dict[str, int] = {}
        for node in with_subgraph_nodes(graph.nodes):  # an If branch may read a chain's inside
            for name in node.input:
                if name:
                    self.readers[name] = self.readers.get(name, 0) + 1
        for node in graph.nodes:  # Loop and Scan bodies hold theirs in `graphs` / `g`
            for a in node.attribute:
                for body in list(a.graphs):
                    for inner in with_subgraph_nodes(list(body.node)):
                        for name in inner.input:
                            self.readers[name] = self.readers.get(name, 0) + 1

    # -- building blocks -----------------------------------------------------------
    def made_by(self, name: str, op_type: str) -> Any | None:
        """The plain ONNX node of type `op_type` producing `name`, if any."""
        node = self.producer.get(name)
        if node is None or node.op_type != op_type or node.domain not in ("", "ai.onnx"):
            return None
        return node

    def private(self, name: str) -> bool:
        """`name` is read by exactly one node and is not a graph output, so
        the node making it may disappear into a fused one."""
        return self.readers.get(name, 0) == 1 and name not in self.graph.outputs

    def reader(self, name: str, op_type: str) -> Any | None:
        """The single node reading private value `name`, when it is `op_type`."""
        users = self.users.get(name, [])
        if not self.private(name) or len(users) != 1:  # its one reader may sit in a subgraph
            return None
        node = users[0]
        ok = node.op_type == op_type and node.domain in ("", "ai.onnx") and len(node.input) == 2
        return node if ok else None

    def is_const(self, name: str, target: float) -> bool:
        """`name` is a one-element Float constant equal to `target` within
        float32 rounding (two units in the last place, so 1/sqrt 2 rounded
        either way from a rounded sqrt 2 still counts)."""
        v = self.graph.values.get(name)
        if v is None or v.const is None or v.kind != "Float" or v.const.size != 1:
            return False
        c = float(v.const.reshape(-1)[0])
        return abs(c - target) <= 2 * float(np.spacing(np.float32(target)))

    def keeps_shape(self, x: str, members: list) -> bool:
        """No constant of the chain has more dims than `x`: a [1, 1, 1] one
        would broadcast a rank-2 x to rank 3, which one Gelu(x) would not."""
        v = self.graph.values.get(x)
        rank = v.rank if v is not None and v.rank is not None else 0
        consts = [self.graph.values[n].const for m in members for n in m.input if n in self.graph.values]
        return all(c is None or c.ndim <= rank for c in consts)

    def factors(self, node: Any, depth: int = 3) -> tuple[list[str], list]:
        """The leaves of the product tree rooted at Mul `node`: operands made by
        Mul nodes (and `Pow(v, 3)`, as v, v, v) that only this tree reads are
        opened up. Returns (leaf names, the opened nodes, `node` included)."""
        leaves: list[str] = []
        nodes = [node]
        for name in node.input:
            inner = self.producer.get(name)
            if depth and inner is not None and self.private(name) and inner.domain in ("", "ai.onnx"):
                if inner.op_type == "Mul" and len(inner.input) == 2:
                    sub_leaves, sub_nodes = self.factors(inner, depth - 1)
                    leaves += sub_leaves
                    nodes = sub_nodes + nodes
                    continue
                if inner.op_type == "Pow" and len(inner.input) == 2 and self.is_const(inner.input[1], 3.0):
                    leaves += [inner.input[0]] * 3
                    nodes = [inner] + nodes
                    continue
            leaves.append(name)
        return leaves, nodes

    def split(self, leaves: list[str], consts: list[float]) -> list[str] | None:
        """`leaves` less one constant leaf equal to each of `consts`, or None
        when one is missing."""
        rest = list(leaves)
        for target in consts:
            hit = next((i for i, name in enumerate(rest) if self.is_const(name, target)), None)
            if hit is None:
                return None
            del rest[hit]
        return rest

    def half_product(self, gate: str, x: str) -> list | None:
        """The nodes computing `0.5 * x * gate` from private value `gate`
        (any grouping: (x * gate) * 0.5, (0.5 * x) * gate, x * (0.5 * gate)),
        the final Mul last, or None."""
        first = self.reader(gate, "Mul")
        if first is None:
            return None
        candidates = [first]
        second = self.reader(first.output[0], "Mul")
        if second is not None:
            candidates.insert(0, second)  # the larger tree first: 0.5 may sit above the first Mul
        for root in candidates:
            leaves, nodes = self.factors(root, depth=1)
            rest = self.split(leaves, [0.5])
            if rest is not None and sorted(rest) == sorted([x, gate]):
                return nodes
        return None

    def plus_one(self, name: str) -> Any | None:
        """The Add reading private `name` with a constant 1, if that is its reader."""
        add = self.reader(name, "Add")
        if add is None:
            return None
        other = add.input[1] if add.input[0] == name else add.input[0]
        return add if self.is_const(other, 1.0) else None

    # -- the patterns ----------------------------------------------------------------
    def exact_gelu(self, erf: Any) -> tuple[str, list, str] | None:
        """0.5 * x * (1 + erf(x / sqrt 2)) around Erf node `erf` (the scaling a
        Div by sqrt 2 or a Mul by 1/sqrt 2): (x, the chain's nodes, "none")."""
        scaled = erf.input[0]
        if not self.private(scaled):
            return None
        x = None
        div = self.made_by(scaled, "Div")
        if div is not None and self.is_const(div.input[1], _SQRT2):
            x, scale = div.input[0], div
        mul = self.made_by(scaled, "Mul")
        if mul is not None:
            for a, b in (list(mul.input), list(mul.input)[::-1]):
                if self.is_const(b, 1.0 / _SQRT2):
                    x, scale = a, mul
        if x is None or self.graph.values.get(x) is None or self.graph.values[x].kind != "Float":
            return None
        add = self.plus_one(erf.output[0])
        tail = None if add is None else self.half_product(add.output[0], x)
        if tail is None:
            return None
        return x, [scale, erf, add] + tail, "none"

    def tanh_gelu(self, tanh: Any) -> tuple[str, list, str] | None:
        """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) around Tanh
        node `tanh`: (x, the chain's nodes, "tanh")."""
        scaled = tanh.input[0]
        scale = self.made_by(scaled, "Mul")
        if scale is None or not self.private(scaled):
            return None
        leaves, _ = self.factors(scale, depth=0)
        inner = self.split(leaves, [_SQRT_2_OVER_PI])
        if inner is None or len(inner) != 1 or not self.private(inner[0]):
            return None
        add = self.made_by(inner[0], "Add")
        if add is None:
            return None
        for x, cubic in (list(add.input), list(add.input)[::-1]):
            term = self.made_by(cubic, "Mul")
            if term is None or not self.private(cubic) or self.graph.values.get(x) is None \
                    or self.graph.values[x].kind != "Float":
                continue
            leaves, cube_nodes = self.factors(term, depth=2)
            rest = self.split(leaves, [_TANH_CUBIC])
            if rest != [x, x, x]:
                continue
            one = self.plus_one(tanh.output[0])
            tail = None if one is None else self.half_product(one.output[0], x)
            if tail is not None:
                return x, cube_nodes + [add, scale, tanh, one] + tail, "tanh"
        return None
