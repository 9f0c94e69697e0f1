"""Batched matmul `[..., m, k] @ [..., k, n]` with broadcast batch dims: a
register-tiled kernel, each task RB x CB outputs.

Measured on the 2-core x64 box, 1024x1024 f32: on the CPU arch this kernel
reaches 3-6 GFLOP/s (10 with a 4x32 tile that takes 2 s to compile; Taichi's
LLVM output stays scalar), NumPy's BLAS 60-67. So on the CPU arch the
backend calls NumPy's matmul on the device buffers instead
(burnbook/backend/taichi/ops/blas.py); GPU archs always run this kernel,
and `BURNBOOK_TAICHI_MATMUL=kernel` forces it on the CPU too.
"""

import numpy as np
import taichi as ti

from .context import Kernel, serial
from .layout import E0, contiguous_strides, rows_meta, row_offsets, loop_shift

RB, CB = 4, 8  # output tile per task: RB rows x CB columns held in registers

@ti.kernel
def _matmul(out: ti.types.ndarray(), a: ti.types.ndarray(), b: ti.types.ndarray(), meta: ti.types.ndarray(),
            ntask: ti.i32, tshift: ti.i32, acc_t: ti.template(), odt: ti.template(), serial: ti.template()):
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        if u & ((1 << tshift) - 1) != 0:
            continue
        t = u >> tshift
        M, N, K = meta[E0], meta[E0 + 1], meta[E0 + 2]
        lrs, lcs, rrs, rcs = meta[E0 + 3], meta[E0 + 4], meta[E0 + 5], meta[E0 + 6]
        nbi, nbj = meta[E0 + 7], meta[E0 + 8]
        per = nbi * nbj
        batch = ti.raw_div(t, per)
        rem = t - batch * per
        bi = ti.raw_div(rem, nbj)
        i0 = bi * RB
        j0 = (rem - bi * nbj) * CB
        o = row_offsets(meta, batch, 3)
        acc = ti.Matrix.zero(acc_t, RB, CB)
        # Edge tiles read clamped (valid) rows/columns and skip them on store.
        for k in range(K):
            bv = ti.Vector([ti.cast(b[o[2] + k * rrs + ti.min(j0 + jj, N - 1) * rcs], acc_t)
                            for jj in ti.static(range(CB))])
            for ii in ti.static(range(RB)):
                av = ti.cast(a[o[1] + ti.min(i0 + ii, M - 1) * lrs + k * lcs], acc_t)
                for jj in ti.static(range(CB)):
                    acc[ii, jj] += av * bv[jj]
        for ii in ti.static(range(RB)):
            for jj in ti.static(range(CB)):
                if i0 + ii < M and j0 + jj < N:
                    out[o[0] + (i0 + ii) * N + j0 + jj] = ti.cast(acc[ii, jj], odt)


matmul_k = Kernel(_matmul)


def run(out, lhs: tuple, rhs: tuple, lshape: tuple, rshape: tuple, oshape: tuple, np_dtype) -> None:
    """out (contiguous, `oshape`) = lhs @ rhs on the kernel; lhs/rhs are
    (buffer, strides, offset) views of the same rank, batch dims
    broadcasting; K >= 1."""
    batch = oshape[:-2]
    M, N, K = oshape[-2], oshape[-1], lshape[-1]

    def batch_strides(shape, strides):
        return tuple(0 if s == 1 and o != 1 else st for s, st, o in zip(shape[:-2], strides[:-2], batch))

    ostrides = tuple(st * M * N for st in contiguous_strides(batch))
    nbi, nbj = -(-M // RB), -(-N // CB)
    meta, nbatch = rows_meta(
        0, batch,
        ((ostrides, 0), (batch_strides(lshape, lhs[1]), lhs[2]), (batch_strides(rshape, rhs[1]), rhs[2])),
        (M, N, K, lhs[1][-2], lhs[1][-1], rhs[1][-2], rhs[1][-1], nbi, nbj))
    acc_t = ti.f64 if np_dtype == np.float64 else ti.f32
    ntask, ser = nbatch * nbi * nbj, serial(nbatch * M * N * K)
    matmul_k.launch(out, lhs[0], rhs[0], meta, ntask, loop_shift(ntask, ser), acc_t, out.dtype, ser)

