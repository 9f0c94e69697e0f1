"""Automatic differentiation: the `Autodiff[B]` backend decorator (Burn's
`burn-autodiff`), its graph, the `Gradients` container, the op-extension API
and a finite-difference gradient checker; `taichi_op` makes a `@ti.kernel` a
trainable op whose backward is Taichi's `kernel.grad`.

    from burnbook.autodiff import Autodiff, Gradients
    B = Autodiff[NdArray]          # backend name "autodiff<ndarray>"
"""

from .backend import Autodiff
from .check import GradCheckError, GradCheckResult, check_grad
from .engine import observe_backward
from .extension import Backward, CustomOp, Ops, Tracked, Untracked
from .gradients import Gradients
from .graph import AutodiffTensor, Node, edges_of, keep_values, nodes_of
from .taichi_kernel import TaichiKernelBackward, TaichiKernelOp, taichi_op

__all__ = [
    "Autodiff", "AutodiffTensor", "Backward", "CustomOp", "GradCheckError",
    "GradCheckResult", "Gradients", "Node", "Ops", "TaichiKernelBackward",
    "TaichiKernelOp", "Tracked", "Untracked", "check_grad", "edges_of",
    "keep_values", "nodes_of", "observe_backward", "taichi_op",
]
