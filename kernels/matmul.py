"""Batched matmul `[..., m, k] @ [..., k, n]` with broadcast batch dims.

Kernel selection, measured on the 2-core x64 box, 1024x1024 f32: on the CPU
arch this register-tiled Taichi kernel reaches 3-6 GFLOP/s (10 with a 4x32
tile that takes 2 s to compile; Taichi's LLVM output stays scalar), NumPy's
BLAS 60-67. So on the CPU arch `run` calls NumPy's matmul directly on the
device buffers: CPU device memory is host memory, so the operands are
zero-copy views and the result is written straight into the output buffer,
with no transfer (measured 55-62 GFLOP/s through the backend). GPU archs
always run the Taichi kernel; `BURNBOOK_TAICHI_MATMUL=kernel` forces it on
the CPU too.
"""

import contextlib
import math

import numpy as np
import taichi as ti

from burnbook._blas import openblas_threads
from burnbook._helper_thread import both
from burnbook.backend.taichi.compat import Launcher, host_array, host_view, write_host
from burnbook.backend.taichi.settings import SETTINGS, serial
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


matmul_k = Launcher(_matmul)


SMALL_GEMM = 1 << 26  # m*n*k below which a matrix product runs on one BLAS thread (see `run`)


@contextlib.contextmanager
def _one_blas_thread(active: bool):
    """NumPy's OpenBLAS on one thread for the block, when `active`."""
    found = openblas_threads() if active else None
    before = int(found[0]()) if found else 1
    if before > 1:
        found[1](1)
    try:
        yield
    finally:
        if before > 1:
            found[1](before)


SPLIT_GEMM = 1 << 23  # m*n*k (summed over the batch) from which two threads share a product


def _halves(oshape: tuple, lshape: tuple, rshape: tuple) -> tuple | None:
    """Index tuples splitting a product in two halves along its first batch
    dim (rows where it has none), or None where it stays whole: too small,
    or BLAS limited to one thread (then this process asked for one thread).
    Two BLAS calls on two Python threads, each on one BLAS thread, use both
    cores without OpenBLAS's own workers, which spin on a core after each
    call (see `run`); each output element is still one dot product, so the
    result is the same."""
    found = openblas_threads()
    if found is None or int(found[0]()) < 2 or math.prod(oshape) * lshape[-1] < SPLIT_GEMM:
        return None
    whole = slice(None)
    if len(oshape) > 2 and oshape[0] > 1:
        cut = oshape[0] // 2
        # (lhs, rhs, out) indices; an operand broadcast along the batch dim is read whole.
        return tuple(tuple(h if shape[0] > 1 else whole for shape in (lshape, rshape)) + (h,)
                     for h in (slice(0, cut), slice(cut, None)))
    if oshape[-2] < 2:
        return None
    cut = oshape[-2] // 2
    top, bottom = (Ellipsis, slice(0, cut), whole), (Ellipsis, slice(cut, None), whole)
    return (top, (Ellipsis,), top), (bottom, (Ellipsis,), bottom)


def _np_view(view: tuple, shape: tuple, np_dtype) -> np.ndarray:
    buf, strides, offset = view
    return host_view(buf, np_dtype, shape, strides, offset)


def run(out, lhs: tuple, rhs: tuple, lshape: tuple, rshape: tuple, oshape: tuple, np_dtype) -> None:
    """out (contiguous, `oshape`) = lhs @ rhs; lhs/rhs are (buffer, strides,
    offset) views of the same rank, batch dims broadcasting; K >= 1."""
    if SETTINGS.matmul == "blas":
        a = _np_view(lhs, lshape, np_dtype)
        b = _np_view(rhs, rshape, np_dtype)
        # Matrix products below SMALL_GEMM run on one BLAS thread (NumPy runs
        # a batched matmul as one BLAS call per matrix). Waking OpenBLAS's
        # workers costs more than they save there, and after the call they
        # spin on a core that Taichi's next parallel kernel needs. Measured on
        # the busy 2-core box, guide CNN step: a conv's 64 GEMMs took 1.3 s on
        # 2 threads (each hand-off can wait a scheduler tick), 8 ms on one.
        # From SPLIT_GEMM on, two halves run on two Python threads instead
        # (`_halves`): one hand-off per product, no spinning workers after it
        # (the guide CNN step's products: 8.0 -> 5.6 ms a step).
        small = oshape[-2] * oshape[-1] * lshape[-1] < SMALL_GEMM
        if SETTINGS.launch == "public":
            with _one_blas_thread(small):
                write_host(out, np.matmul(a, b))
            return
        o = host_array(out, np_dtype).reshape(oshape)
        halves = _halves(oshape, lshape, rshape) if small else None
        if halves is None:
            with _one_blas_thread(small):
                np.matmul(a, b, out=o)
            return
        (la, lb, lo), (ha, hb, ho) = halves
        with _one_blas_thread(True):
            both(lambda: np.matmul(a[la], b[lb], out=o[lo]), lambda: np.matmul(a[ha], b[hb], out=o[ho]))
        return
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
    matmul_k(out, lhs[0], rhs[0], meta, ntask, loop_shift(ntask, ser), acc_t, out.dtype, ser)

