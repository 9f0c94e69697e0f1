"""Strided layouts: how a kernel walks an N-d iteration space without being
compiled per rank.

An operand is a view `(buffer, strides, offset)` in elements; broadcasting is a
zero stride. Host code merges dims that every operand walks contiguously
(`coalesce`), splits the last dim off as the *inner* loop and packs the rest
into a small int32 *meta* buffer that every strided kernel reads:

    meta[OP]             op code
    meta[NOUT]           number of outer dims (<= MAXO)
    meta[INNER]          inner length
    meta[BLK], [NBLK]    inner block length and blocks per row
    meta[E0 ...]         per-kernel extras (reduced length, matmul sizes...)
    meta[SHAPE + d]      outer dim sizes
    meta[OPS + j*OPW]    operand j: offset, inner stride, outer strides

One task handles one block of one row: it decomposes the row index once, then
runs a serial inner loop, so integer divisions are per row, not per element.
On GPU archs blocks have length 1 (one thread per element, coalesced access).
Meta buffers are cached by layout, so steady-state ops upload nothing.

Task loops are stretched on the CPU (`loop_shift`): Taichi 1.7's CPU range-for
hands its threads blocks of 512 iterations when the loop's end is a run-time
value, so a loop over fewer than 1,024 tasks ran on one thread.
"""

from functools import lru_cache
from math import prod
from typing import Sequence

import numpy as np
import taichi as ti

from . import data
from .context import CONTEXT

MAXO = 7  # outer dims after merging; with the inner dim, rank <= 8 (more if dims merge)
HDR = 16
OP, NOUT, INNER, BLK, NBLK = 0, 1, 2, 3, 4
E0 = 5  # extras E0 .. E0+10
SHAPE = HDR
OPS = HDR + MAXO
OPW = 2 + MAXO

_cache: dict = {}
_CACHE_MAX = 4096


@lru_cache(maxsize=4096)
def contiguous_strides(shape: tuple) -> tuple:
    """Row-major strides (in elements) of `shape`, a tuple (cached: hot path)."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def coalesce(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple:
    """Drop size-1 dims and merge neighbours that every operand walks contiguously."""
    out_shape: list = []
    out_strides: list = [[] for _ in strides]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        if out_shape and all(o[-1] == s[d] * n for o, s in zip(out_strides, strides)):
            out_shape[-1] *= n
            for o, s in zip(out_strides, strides):
                o[-1] = s[d]
        else:
            out_shape.append(n)
            for o, s in zip(out_strides, strides):
                o.append(s[d])
    return out_shape, out_strides


def _upload(arr: np.ndarray):
    buf = CONTEXT.buffer(ti.i32, arr.size)
    data.upload(buf, arr)
    return buf


def _cached(key: tuple, build) -> tuple:
    hit = _cache.get(key)
    if hit is None:
        arr, ntask = build()
        if len(_cache) >= _CACHE_MAX:
            del _cache[next(iter(_cache))]
        hit = _cache[key] = (_upload(arr), ntask)
    return hit


def _new_meta(nops: int) -> np.ndarray:
    return np.zeros(OPS + nops * OPW, dtype=np.int32)


def _put_outer(meta: np.ndarray, outer: Sequence[int], strides: Sequence[Sequence[int]]) -> None:
    if len(outer) > MAXO:
        raise ValueError(
            f"Taichi backend: this layout needs {len(outer) + 1} dims after merging; at most {MAXO + 1} are supported"
        )
    meta[NOUT] = len(outer)
    meta[SHAPE:SHAPE + len(outer)] = outer
    for j, st in enumerate(strides):
        base = OPS + j * OPW
        meta[base + 2:base + 2 + len(outer)] = st


def block_length(inner: int) -> int:
    """Elements one task of a map walks along a run of `inner` (`meta[BLK]`)."""
    return max(1, min(inner, CONTEXT.settings.block))


def map_meta(op: int, shape: tuple, operands: Sequence[tuple], extras: tuple = ()) -> tuple:
    """Meta buffer and task count for an element-wise walk of `shape`.

    `operands` are `(strides, offset)` pairs aligned to `shape` (zero strides
    where broadcast); the output, when it is one of them, comes first.
    """
    block = CONTEXT.settings.block
    key = (op, shape, operands, extras, block)

    def build():
        merged, strides = coalesce(shape, [st for st, _ in operands])
        if not merged:
            merged, strides = [1], [[0] for _ in operands]
        inner = merged[-1]
        blk = block_length(inner)
        nblk = -(-inner // blk)
        meta = _new_meta(len(operands))
        meta[OP], meta[INNER], meta[BLK], meta[NBLK] = op, inner, blk, nblk
        meta[E0:E0 + len(extras)] = extras
        _put_outer(meta, merged[:-1], [st[:-1] for st in strides])
        for j, ((_, offset), st) in enumerate(zip(operands, strides)):
            meta[OPS + j * OPW] = offset
            meta[OPS + j * OPW + 1] = st[-1]
        return meta, prod(merged[:-1]) * nblk

    return _cached(key, build)


def rows_meta(op: int, outer: Sequence[int], operands: Sequence[tuple], extras: tuple) -> tuple:
    """Meta buffer for kernels that give each *row* (outer index) its own task
    and walk the rest themselves (reductions, matmul): only outer dims, the
    operands' outer strides and offsets, and the extras."""
    key = ("rows", op, tuple(outer), tuple(operands), extras)  # never equal to a map key (an op first)

    def build():
        merged, strides = coalesce(outer, [st for st, _ in operands])
        meta = _new_meta(len(operands))
        meta[OP] = op
        meta[E0:E0 + len(extras)] = extras
        _put_outer(meta, merged, strides)
        for j, (_, offset) in enumerate(operands):
            meta[OPS + j * OPW] = offset
        return meta, prod(merged)

    return _cached(key, build)


CPU_LOOP = 4096
"""Iterations a CPU task loop is stretched to: 8 of the 512-iteration blocks
that Taichi's CPU runtime deals to its threads, so two threads share the
work and a busy core leaves blocks to the other."""


def loop_shift(ntask: int, serial: bool) -> int:
    """The shift a kernel's task loop runs with (its argument `tshift` after
    `ntask`): the loop is `for u in range(ntask << tshift)`, task `u >> tshift` runs
    at the iterations whose low `tshift` bits are zero and the others return at
    once. Taichi 1.7's CPU runtime hands its threads 512 loop iterations at a
    time when the loop's end is a run-time value (its adaptive block size;
    `loop_config(block_dim=...)` does not change it), so a loop over 128
    tasks of 4096 elements ran on one thread. Stretched to `CPU_LOOP`
    iterations it runs on every thread, for a few ns per empty iteration.
    0 for a serial launch and on GPUs (one thread per iteration there)."""
    if serial or CONTEXT.settings.gpu or ntask >= CPU_LOOP or ntask <= 0:
        return 0
    return (-(-CPU_LOOP // ntask) - 1).bit_length()


@ti.func
def row_offsets(meta: ti.template(), row, nops: ti.template()):
    """Element offsets of `nops` operands at the start of row `row`."""
    offs = ti.Vector([meta[OPS + j * OPW] for j in ti.static(range(nops))])
    r = row
    nout = meta[NOUT]
    for q in range(nout):
        d = nout - 1 - q
        size = meta[SHAPE + d]
        m = ti.raw_mod(r, size)
        r = ti.raw_div(r, size)
        for j in ti.static(range(nops)):
            offs[j] += m * meta[OPS + j * OPW + 2 + d]
    return offs


@ti.func
def inner_strides(meta: ti.template(), nops: ti.template()):
    return ti.Vector([meta[OPS + j * OPW + 1] for j in ti.static(range(nops))])
