"""The Burn Book's custom-kernel example as Taichi kernels:
`out = relu(lhs @ rhs + bias)` on rank-3 tensors `[batch, m, k] @ [batch,
k, n] + [batch, m, n]`, where a size-1 batch dim of `lhs` or `rhs` and any
size-1 dim of `bias` broadcast.

The kernels follow the calling convention of `burnbook.autodiff.taichi_op`:
inputs first, then the output (allocated zero-filled by burnbook), then a
`dtype: ti.template()` that burnbook fills with the output's element type, so
one kernel serves f32 and f64 tensors.

Two versions:

- `fused_matmul_add_relu` obeys Taichi's autodiff rules: every element of
  `out` is written exactly once, after all of its reads, and the running sum
  over `k` lives in a local variable (Taichi's reverse mode replays such
  loop-carried locals from its autodiff stack). Its `kernel.grad` is right.
- `fused_matmul_add_relu_in_place` computes the same forward, but first
  accumulates the matmul into `out` and then overwrites `out` with
  `relu(out + bias)`: a write after a read of the same element. Taichi 1.7.4
  compiles its `kernel.grad` without a word and returns wrong gradients. It
  exists to show that `check_grad` catches such a kernel.

No `from __future__ import annotations` here: Taichi reads the parameter
annotations as objects.
"""

import taichi as ti


Array3 = ti.types.ndarray(ndim=3)


@ti.kernel
def fused_matmul_add_relu(lhs: Array3, rhs: Array3, bias: Array3,
                          out: Array3, dtype: ti.template()):
    # One parallel task per output element; each element is stored once.
    for b, i, j in ti.ndrange(out.shape[0], out.shape[1], out.shape[2]):
        bl, br = b % lhs.shape[0], b % rhs.shape[0]  # broadcast batches
        acc = ti.cast(0, dtype)  # a local running sum, not out[b, i, j]
        for k in range(lhs.shape[2]):
            acc += lhs[bl, i, k] * rhs[br, k, j]
        z = acc + bias[b % bias.shape[0], i % bias.shape[1],
                       j % bias.shape[2]]
        # relu as a select: no gradient where z <= 0, as burnbook's relu
        out[b, i, j] = ti.select(z > 0, z, ti.cast(0, dtype))


@ti.kernel
def fused_matmul_add_relu_in_place(lhs: Array3, rhs: Array3, bias: Array3,
                                   out: Array3, dtype: ti.template()):
    # BROKEN ON PURPOSE: the forward is right, kernel.grad silently is not.
    for b, i, j, k in ti.ndrange(out.shape[0], out.shape[1], out.shape[2],
                                 lhs.shape[2]):
        bl, br = b % lhs.shape[0], b % rhs.shape[0]
        out[b, i, j] += lhs[bl, i, k] * rhs[br, k, j]
    for b, i, j in ti.ndrange(out.shape[0], out.shape[1], out.shape[2]):
        # Reads out[b, i, j], then overwrites it: the element is read
        # before its last write, which Taichi's autodiff does not allow.
        z = out[b, i, j] + bias[b % bias.shape[0], i % bias.shape[1],
                                j % bias.shape[2]]
        out[b, i, j] = ti.select(z > 0, z, ti.cast(0, dtype))


def output_shape(lhs: tuple, rhs: tuple, bias: tuple) -> tuple:
    """The output shape `[batch, m, n]` of the fused op, or a ValueError
    that names the shapes which do not fit."""
    if not (len(lhs) == len(rhs) == len(bias) == 3):
        raise ValueError(f"fused_matmul_add_relu: expected rank-3 tensors, got shapes "
                         f"{list(lhs)}, {list(rhs)}, {list(bias)}")
    if lhs[2] != rhs[1]:
        raise ValueError(f"fused_matmul_add_relu: cannot multiply {list(lhs)} by {list(rhs)}")
    if lhs[0] != rhs[0] and 1 not in (lhs[0], rhs[0]):
        raise ValueError(f"fused_matmul_add_relu: batch dims of {list(lhs)} and {list(rhs)} "
                         "do not broadcast")
    out = (max(lhs[0], rhs[0]), lhs[1], rhs[2])
    if any(b != o and b != 1 for b, o in zip(bias, out)):
        raise ValueError(f"fused_matmul_add_relu: bias of shape {list(bias)} does not broadcast "
                         f"to the product's shape {list(out)}")
    return out


__all__ = ["fused_matmul_add_relu", "fused_matmul_add_relu_in_place", "output_shape"]
