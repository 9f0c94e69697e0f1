"""`explain(t)`: what a lazy tensor would run, without running it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import codegen, executor
from .stream import FusionTensor, graph


@dataclass
class Explanation:
    """The recorded `stream` (one line per op), the `group` of tensors the one
    fused kernel writes, and that kernel's `source` and cache `path`."""

    stream: list
    group: list
    source: str
    path: Path | None

    def __str__(self) -> str:
        if not self.stream:
            return "ready: nothing recorded"
        return "\n".join(["stream:", *("  " + line for line in self.stream), "fused kernel writes: "
                          + ", ".join(self.group), f"source ({self.path.name}, in the fusion cache):", self.source])


def _primitive(t: Any) -> FusionTensor:
    p = getattr(t, "primitive", t)  # a Tensor's primitive, or an Autodiff primitive's inner one
    p = getattr(p, "_p", p)
    p = getattr(p, "primitive", p)
    if type(p) is not FusionTensor:
        raise TypeError(f"explain: expected a tensor of a Fusion backend, got {type(t).__name__}")
    return p


def explain(t: Any) -> Explanation:
    """The stream behind `t` (a Tensor or primitive of `Fusion[B]` or
    `Autodiff[Fusion[B]]`) and the kernel that would compute it."""
    p = _primitive(t)
    if p.node is None:
        return Explanation([], [], "", None)
    order, leaves = graph([p])
    outputs = [p] + executor._external(order, p)
    plan, _ = codegen.plan(order, leaves, outputs)
    names = {id(x): f"x{j}" for j, x in enumerate(leaves)}
    lines = [f"x{j}: ready {list(x.shape)} {x.dtype}" for j, x in enumerate(leaves)]
    for k, u in enumerate(order):
        names[id(u)] = f"v{len(leaves) + k}"
        args = ", ".join(names[id(i)] for i in u.node.inputs)
        scalars = "".join(f", {s:g}" for s in u.node.scalars)
        lines.append(f"{names[id(u)]} = {u.node.name}({args}{scalars})  -> {list(u.shape)} {u.dtype}")
    group = [names[id(u)] for u in outputs]
    return Explanation(lines, group, codegen.source(plan), executor.cache_dir() / f"fused_{plan.key}.py")
