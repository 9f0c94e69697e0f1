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

`place_labels` then puts each node's label above or below it, at the
nearest of a few heights where it overlaps no other label and no marker,
and `label_extent` says how far the labels reach past the nodes, so the
figure can be sized to hold them all (a deep network's graph is wide).
"""

from __future__ import annotations

from typing import Hashable, Sequence

__all__ = ["layered_layout", "layers_of", "place_labels", "label_extent", "text_size", "Box"]

Box = tuple[float, float, float, float]   # left, top, right, bottom in pixels (y grows downwards)


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


def _overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(points: Sequence[tuple[float, float]], sizes: Sequence[tuple[float, float]], *,
                 marker: float = 14.0, gap: float = 3.0, levels: int = 3) -> tuple[list[float], float]:
    """Vertical offsets (pixels, negative = above) of each label's centre
    from its point, and the total overlap area left (0: none overlaps).

    `points` are the nodes in pixels (y down), `sizes` each label's
    (width, height). Labels are placed left to right; each takes the
    nearest slot, above then below, up to `levels` label heights away,
    whose box meets no placed label and no marker (else the slot that
    overlaps least).
    """
    half = marker / 2
    order = sorted(range(len(points)), key=lambda k: (points[k][0], points[k][1]))
    reach = max((w for w, _ in sizes), default=0.0) / 2 + half
    # Boxes are placed left to right: one that ends left of `x - reach`
    # cannot meet this label or any later one, so it leaves the window.
    window: list[Box] = []
    markers = [(points[k][0] - half, points[k][1] - half, points[k][0] + half, points[k][1] + half) for k in order]
    offsets = [0.0] * len(points)
    left_over = 0.0
    for n, i in enumerate(order):
        (x, y), (w, h) = points[i], sizes[i]
        window = [b for b in window if b[2] > x - reach]
        near = window + [m for m in markers if abs(m[0] - x) < reach + w]
        best: tuple[float, float, Box] | None = None
        for level in range(levels):
            for side in (-1, 1):
                dy = side * (half + gap + h / 2 + level * (h + gap))
                box = (x - w / 2, y + dy - h / 2, x + w / 2, y + dy + h / 2)
                cost = sum(_overlap(box, b) for b in near)
                if best is None or cost < best[0]:
                    best = (cost, dy, box)
                if cost == 0:
                    break
            if best[0] == 0:
                break
        cost, offsets[i], box = best
        left_over += cost
        window.append(box)
    return offsets, left_over


def label_extent(points: Sequence[tuple[float, float]], sizes: Sequence[tuple[float, float]],
                 offsets: Sequence[float]) -> Box:
    """How far the labels reach beyond the points' own bounding box:
    (left, top, right, bottom) margins in pixels, each at least 0."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    reach = [0.0, 0.0, 0.0, 0.0]
    for (x, y), (w, h), dy in zip(points, sizes, offsets):
        reach[0] = max(reach[0], min(xs) - (x - w / 2))
        reach[1] = max(reach[1], min(ys) - (y + dy - h / 2))
        reach[2] = max(reach[2], (x + w / 2) - max(xs))
        reach[3] = max(reach[3], (y + dy + h / 2) - max(ys))
    return reach[0], reach[1], reach[2], reach[3]


# Advance widths of DejaVu Sans (Chromium's sans-serif on Debian), in em,
# rounded up: an estimate a little wider than most sans-serif fonts draw.
_NARROW = {c: 0.34 for c in " .,:;'|!il"}
_NARROW.update({c: 0.4 for c in "[](){}fjrt-"})


def text_size(text: str, size: float) -> tuple[float, float]:
    """(width, height) in px that `text` (lines split by `<br>`) takes at
    `size` px: an estimate for laying labels out before any browser draws them."""
    lines = text.split("<br>")
    width = max(sum(_NARROW.get(c, 0.72 if c.isupper() or c in "mw_%@" else 0.64) for c in line) for line in lines)
    return width * size + 4, len(lines) * size * 1.2 + 2
