"""`Fusion[B]` (Burn's burn-fusion): lazy op streams compiled into fused Taichi kernels.

    from burnbook.backend import Fusion, Taichi
    B = Autodiff[Fusion[Taichi]]

- stream.py    `FusionTensor` (ready, or lazy with its `Node`) and the graph walk
- codegen.py   a graph's plan, its shape-free signature and its kernel source
- executor.py  generated sources cached on disk, launches, fused reductions
- recording.py how an op records, fuses into its input's kernel or passes through to B
- backend.py   the `Fusion[B]` class: which ops record, fuse or pass through, by name
- explain.py   `explain(t)`: the stream, the fused group and the kernel a tensor would run
"""

from .backend import Fusion
from .explain import Explanation, explain
from .stream import FusionTensor

__all__ = ["Explanation", "Fusion", "FusionTensor", "explain"]
