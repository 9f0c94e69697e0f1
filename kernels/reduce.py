"""Reductions along one dim of a strided view: sum (and mean), max, min, argmax, argmin.

Each task reduces one output element, or one chunk of it when there are too
few outputs to fill the machine (then a second launch reduces the chunks).
Float sums accumulate in the accumulator dtype the backend picks (f64 where
the arch has native f64 math, compensated f32 on SPIR-V archs; f64 tensors
always in f64), int sums in i64. max/min propagate NaN and
argmax/argmin return the first NaN if any, else the first extreme, as NumPy.
"""

from enum import IntEnum
from math import prod

import taichi as ti

from taichi.types import is_real

from .context import CONTEXT, Kernel, serial
from .layout import E0, rows_meta, row_offsets, loop_shift


class Reduce(IntEnum):
    """Reductions along a dim; ARGMAX/ARGMIN give i64 positions (the first on ties)."""

    SUM = 0  # also a mean, with scale = 1/n
    MAX = 1
    MIN = 2
    ARGMAX = 3
    ARGMIN = 4


@ti.func
def _beats(op: ti.template(), v, best, adt: ti.template()):
    """Whether v replaces best: strictly greater (MAX/ARGMAX) or smaller, or a first NaN."""
    win = v > best
    if ti.static(op == Reduce.MIN or op == Reduce.ARGMIN):
        win = v < best
    if ti.static(is_real(adt)):
        if ti.math.isnan(best):
            win = False
        elif ti.math.isnan(v):
            win = True
    return win


@ti.func
def _sum(x: ti.template(), base, k0, k1, rs, adt: ti.template()):
    """x[base + k*rs] for k in [k0, k1) summed in `adt`. An f64 or i64
    accumulator keeps four partial sums (independent add chains, not one
    latency-bound chain); an f32 one (SPIR-V archs, where f32 data never
    meets f64 math) carries Neumaier's compensation, so it stays as close
    to the exact sum as the f64 accumulator would."""
    acc = ti.cast(x[base + k0 * rs], adt)
    if ti.static(adt == ti.f32):
        c = ti.cast(0, adt)
        for k in range(k0 + 1, k1):
            v = ti.cast(x[base + k * rs], adt)
            t = acc + v
            if ti.abs(acc) >= ti.abs(v):
                c += (acc - t) + v
            else:
                c += (v - t) + acc
            acc = t
        acc += c
    else:
        a1, a2, a3 = ti.cast(0, adt), ti.cast(0, adt), ti.cast(0, adt)
        k = k0 + 1
        while k + 3 < k1:
            acc += ti.cast(x[base + k * rs], adt)
            a1 += ti.cast(x[base + (k + 1) * rs], adt)
            a2 += ti.cast(x[base + (k + 2) * rs], adt)
            a3 += ti.cast(x[base + (k + 3) * rs], adt)
            k += 4
        while k < k1:
            acc += ti.cast(x[base + k * rs], adt)
            k += 1
        acc = (acc + a1) + (a2 + a3)
    return acc


def _make_reduce(S):
    @ti.kernel
    def reduce(out: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32,
               scale: S, op: ti.template(), adt: ti.template(), odt: ti.template(), serial: ti.template()):
        ti.loop_config(serialize=serial)
        for u in range(ntask << tshift):
            if u & ((1 << tshift) - 1) != 0:
                continue
            t = u >> tshift
            nchunk = meta[E0]
            o = ti.raw_div(t, nchunk)
            k0 = (t - o * nchunk) * meta[E0 + 3]
            k1 = ti.min(k0 + meta[E0 + 3], meta[E0 + 1])
            rs = meta[E0 + 2]
            base = row_offsets(meta, o, 1)[0]
            acc = ti.cast(x[base + k0 * rs], adt)
            if ti.static(op == Reduce.SUM):
                acc = _sum(x, base, k0, k1, rs, adt)
                if scale != 1:
                    acc = ti.cast(acc * scale, adt)
            else:
                for k in range(k0 + 1, k1):
                    v = ti.cast(x[base + k * rs], adt)
                    if _beats(op, v, acc, adt):
                        acc = v
            out[t] = ti.cast(acc, odt)

    return reduce


@ti.kernel
def _argreduce(out: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32,
               op: ti.template(), adt: ti.template(), serial: ti.template()):
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        if u & ((1 << tshift) - 1) != 0:
            continue
        t = u >> tshift
        rs = meta[E0 + 2]
        base = row_offsets(meta, t, 1)[0]
        best = ti.cast(x[base], adt)
        where = 0
        for k in range(1, meta[E0 + 1]):
            v = ti.cast(x[base + k * rs], adt)
            if _beats(op, v, best, adt):
                best = v
                where = k
        out[t] = ti.cast(where, ti.i64)


# The scale (1/n for a mean) travels in the accumulator's precision: f32 for
# an f32 accumulator, f64 for f64 and for ints (whose mean scales in f64).
_reduce_k = {S: Kernel(_make_reduce(S)) for S in (ti.f32, ti.f64)}
argreduce_k = Kernel(_argreduce)


def run(op: Reduce, x: tuple, shape: tuple, dim: int, out, adt, scale: float = 1.0) -> None:
    """Reduce view `x` = (buffer, strides, offset) of `shape` along `dim` into
    the contiguous `out` (the shape with `dim` removed, size >= 1); shape[dim] > 0.
    `adt` is the accumulator dtype; `scale` multiplies a SUM (mean = 1/n)."""
    buf, strides, offset = x
    R, rs = shape[dim], strides[dim]
    outer = shape[:dim] + shape[dim + 1:]
    ost = strides[:dim] + strides[dim + 1:]
    nout = prod(outer)
    if op in (Reduce.ARGMAX, Reduce.ARGMIN):
        meta, _ = rows_meta(op, outer, ((ost, offset),), (1, R, rs, R))
        ser = serial(nout * R)
        argreduce_k.launch(out, buf, meta, nout, loop_shift(nout, ser), op, adt, ser)
        return
    nchunk = 1
    # Too few outputs to fill the arch: split the reduced dim into chunks.
    settings = CONTEXT.settings
    tasks, min_chunk = settings.reduce_tasks, settings.reduce_min_chunk
    if nout < tasks and R >= 2 * min_chunk:
        nchunk = min(-(-tasks // nout), R // min_chunk)
    clen = -(-R // nchunk)
    nchunk = -(-R // clen)
    meta, _ = rows_meta(op, outer, ((ost, offset),), (nchunk, R, rs, clen))
    reduce_k = _reduce_k[ti.f32 if adt is ti.f32 else ti.f64].launch
    ser = serial(nout * R)
    if nchunk == 1:
        reduce_k(out, buf, meta, nout, loop_shift(nout, ser), scale, op, adt, out.dtype, ser)
        return
    part = CONTEXT.buffer(adt, nout * nchunk)
    reduce_k(part, buf, meta, nout * nchunk, loop_shift(nout * nchunk, ser), 1.0, op, adt, adt, ser)
    meta2, _ = rows_meta(op, (nout,), (((nchunk,), 0),), (1, nchunk, 1, nchunk))
    ser = serial(nout * nchunk)
    reduce_k(out, part, meta2, nout, loop_shift(nout, ser), scale, op, adt, out.dtype, ser)
