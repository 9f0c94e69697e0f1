"""A layered left-to-right layout for a DAG, in pure Python (no Graphviz).

Sugiyama's method cut down to what a computation graph needs:

1. Layering by longest path: a node is one layer right of its right-most
   parent, so every edge points left to right and the output ends up in
   the last layer; then every node moves right as far as its consumers
   allow, so a side branch (a parameter, its reshape) sits just left of
   the op that reads it.
2. Ordering within layers by barycentres: a few sweeps left-to-right then
   right-to-left, each sorting a layer by the mean position of its
   neighbours in the layer before, which removes most edge crossings.
3. Coordinates: `x` is the layer, `y` the rank in the layer, centred on 0.

Long edges are not split into dummy nodes; for graphs of a few hundred
nodes that keeps the code short and the picture readable.
"""

from __future__ import annotations

from typing import Hashable, Sequence

__all__ = ["layered_layout", "layers_of"]


def layers_of(nodes: Sequence[Hashable], edges: Sequence[tuple[Hashable, Hashable]]) -> dict:
    """Layer of each node, `{node: layer}`: longest path from the sources,
    then each node just left of its left-most child.

    `edges` are `(parent, child)` pairs; a cycle is a ValueError.
    """
    index = {n: i for i, n in enumerate(nodes)}
    parents: dict = {n: [] for n in nodes}
    children: dict = {n: [] for n in nodes}
    for p, c in edges:
        if p not in index or c not in index:
            missing = p if p not in index else c
            raise ValueError(f"layers_of: edge ({p!r}, {c!r}) names {missing!r}, which is not a node")
        parents[c].append(p)
        children[p].append(c)
    pending = {n: len(parents[n]) for n in nodes}
    ready = [n for n in nodes if pending[n] == 0]
    layer = {n: 0 for n in ready}
    topo = []
    while ready:
        n = ready.pop()
        topo.append(n)
        for c in children[n]:
            layer[c] = max(layer.get(c, 0), layer[n] + 1)
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)
    if len(topo) != len(nodes):
        raise ValueError("layers_of: the graph has a cycle, so it has no left-to-right layout")
    # Then pull every node right, up to just left of its first consumer: a
    # parameter (and its reshape) used late in a network stays next to the
    # op that reads it instead of sitting in column 0.
    for n in reversed(topo):
        if children[n]:
            layer[n] = min(layer[c] for c in children[n]) - 1
    return layer


def layered_layout(nodes: Sequence[Hashable], edges: Sequence[tuple[Hashable, Hashable]],
                   sweeps: int = 4) -> dict:
    """Positions `{node: (x, y)}`: x the layer, y the rank centred on 0.

    Within a layer, nodes start in the order given (e.g. topological) and are
    reordered by `sweeps` rounds of the barycentre heuristic.
    """
    layer = layers_of(nodes, edges)
    order = {n: i for i, n in enumerate(nodes)}
    width = max(layer.values(), default=-1) + 1
    columns: list[list] = [[] for _ in range(width)]
    for n in nodes:
        columns[layer[n]].append(n)
    parents: dict = {n: [] for n in nodes}
    children: dict = {n: [] for n in nodes}
    for p, c in edges:
        parents[c].append(p)
        children[p].append(c)

    def rank_map() -> dict:
        return {n: i - (len(col) - 1) / 2 for col in columns for i, n in enumerate(col)}

    for _ in range(sweeps):
        for direction, neighbours in ((range(1, width), parents), (range(width - 2, -1, -1), children)):
            for k in direction:
                pos = rank_map()
                col = columns[k]

                def key(n, pos=pos, neighbours=neighbours, col=col):
                    near = [pos[m] for m in neighbours[n]]
                    here = col.index(n) - (len(col) - 1) / 2
                    # Nodes without neighbours on that side keep their place.
                    return (sum(near) / len(near) if near else here, order[n])
                columns[k] = sorted(col, key=key)
    pos = rank_map()
    return {n: (float(layer[n]), float(pos[n])) for n in nodes}
