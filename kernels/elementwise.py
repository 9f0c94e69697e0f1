"""Element-wise kernels over strided views: one kernel per arity, the op a template argument.

`map1` (unary, scalar, cast/copy), `map2` (binary, comparisons, mask_fill) and
`map3` (mask_where), whose op codes are the enums `UnaryOp`, `BinaryOp` and
`TernaryOp` (element-wise ops by how many tensors they read), walk a layout described by a meta buffer (layout.py), so
one compiled instance serves every rank, shape, stride and broadcast;
instances differ by op and dtypes. The op is chosen with `ti.static`, so one
op's code never compiles into another's kernel: an f32 `neg` holds no erf,
and an f64 `add` compiles on a SPIR-V arch whose f64 `exp` would not.

With unit inner strides the cheapest, most frequent ops (copy/cast, +, -, *,
/) take dense loops of their own (`_dense1`, `_dense2`), which LLVM
vectorises: on 16M contiguous f32 elements they cost 30-35 ms of CPU time
against 48 ms for the general strided loop."""

from enum import IntEnum
from math import prod
from typing import Sequence

import numpy as np
import taichi as ti

from taichi.types import is_real

from .context import Kernel, serial
from .layout import BLK, INNER, NBLK, inner_strides, map_meta, row_offsets, loop_shift
from .mathfn import cos_, erf64, erf_fit, exp_, log1p, log_, pow_, sin_, tanh_


class UnaryOp(IntEnum):
    """Op codes of one tensor x and scalars s1, s2 (`map1`); each compiles into a kernel of its own."""

    COPY = 0  # also a cast, when the output dtype differs
    ADD_S = 1
    SUB_S = 2
    MUL_S = 3
    DIV_S = 4
    POW_S = 5
    NEG = 6
    ABS = 7
    CLAMP = 8  # s1 <= x <= s2
    EXP = 9
    LOG = 10
    LOG1P = 11
    ERF = 12
    SQRT = 13
    RECIP = 14
    COS = 15
    SIN = 16
    TANH = 17
    EQ_S = 18
    GT_S = 19
    GE_S = 20
    LT_S = 21
    LE_S = 22
    NOT = 23


class BinaryOp(IntEnum):
    """Op codes of two broadcast tensors x, y and a scalar s1 (`map2`)."""

    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    POW = 4
    EQ = 5
    GT = 6
    GE = 7
    LT = 8
    LE = 9
    AND = 10
    OR = 11
    FILL = 12  # s1 where y, else x (mask_fill)


class TernaryOp(IntEnum):
    """The op code of three broadcast tensors x, y and a mask (`map3`)."""

    WHERE = 0  # y where the mask, else x (mask_where)


@ti.func
def _int_div(x, y):
    """Division truncating toward zero; 0 for y == 0 (as NumPy gives)."""
    q = x - x
    if y == -1:
        q = -x  # also wraps INT_MIN / -1 as NumPy does, instead of trapping
    elif y != 0:
        q = ti.raw_div(x, y)
    return q


@ti.func
def _float_math(op: ti.template(), x, c1, ct: ti.template()):
    v = ti.cast(x, ct)
    k = ti.cast(c1, ct)
    r = v
    if ti.static(op == UnaryOp.DIV_S):
        r = v / k
    elif ti.static(op == UnaryOp.POW_S):  # NumPy's fast paths: x**2 is x*x, x**0.5 is sqrt(x)
        if k == 2:
            r = v * v
        elif k == 0.5:
            r = ti.sqrt(v)
        else:
            r = pow_(v, k, ct)
    elif ti.static(op == UnaryOp.EXP):
        r = exp_(v, ct)
    elif ti.static(op == UnaryOp.LOG):
        r = log_(v, ct)
    elif ti.static(op == UnaryOp.LOG1P):
        r = log1p(v, ct)
    elif ti.static(op == UnaryOp.ERF):
        if ti.static(ct == ti.f64):
            r = erf64(v)
        else:
            r = erf_fit(v, ct)
    elif ti.static(op == UnaryOp.SQRT):
        r = ti.sqrt(v)
    elif ti.static(op == UnaryOp.RECIP):
        r = ti.cast(1, ct) / v
    elif ti.static(op == UnaryOp.COS):
        r = cos_(v, ct)
    elif ti.static(op == UnaryOp.SIN):
        r = sin_(v, ct)
    elif ti.static(op == UnaryOp.TANH):
        r = tanh_(v, ct)
    return r


@ti.func
def _div_pow(op: ti.template(), x, y, ct: ti.template()):
    u = ti.cast(x, ct)
    v = ti.cast(y, ct)
    r = u
    if ti.static(op == BinaryOp.POW):
        r = pow_(u, v, ct)
    else:
        r = u / v
    return r


@ti.func
def unary(op: ti.template(), x, s1, s2, dt: ti.template(), odt: ti.template()):
    c1 = ti.cast(s1, dt)  # a scalar takes the tensor's dtype first, as in NumPy
    c2 = ti.cast(s2, dt)
    r = ti.cast(0, odt)
    if ti.static(op == UnaryOp.COPY):
        r = ti.cast(x, odt)
    elif ti.static(op == UnaryOp.EQ_S):
        r = ti.cast(x == c1, odt)
    elif ti.static(op == UnaryOp.GT_S):
        r = ti.cast(x > c1, odt)
    elif ti.static(op == UnaryOp.GE_S):
        r = ti.cast(x >= c1, odt)
    elif ti.static(op == UnaryOp.LT_S):
        r = ti.cast(x < c1, odt)
    elif ti.static(op == UnaryOp.LE_S):
        r = ti.cast(x <= c1, odt)
    elif ti.static(op == UnaryOp.NOT):
        r = ti.cast(x == ti.cast(0, dt), odt)
    elif ti.static(dt != ti.u8):
        if ti.static(op == UnaryOp.ADD_S):
            r = ti.cast(x + c1, odt)
        elif ti.static(op == UnaryOp.SUB_S):
            r = ti.cast(x - c1, odt)
        elif ti.static(op == UnaryOp.MUL_S):
            r = ti.cast(x * c1, odt)
        elif ti.static(op == UnaryOp.NEG):
            r = ti.cast(-x, odt)
        elif ti.static(op == UnaryOp.ABS):
            r = ti.cast(ti.abs(x), odt)
        elif ti.static(op == UnaryOp.CLAMP):
            # Selects, not branches: a data-dependent branch mispredicts on
            # about half of random data (5x slower on the CPU). NaN fails
            # both tests and passes through, as with np.maximum/minimum.
            v = ti.select(x < c1, c1, x)
            r = ti.cast(ti.select(v > c2, c2, v), odt)
        elif ti.static(is_real(dt)):
            r = ti.cast(_float_math(op, x, c1, ti.f32 if dt == ti.f16 else dt), odt)
        elif ti.static(op == UnaryOp.DIV_S):
            r = ti.cast(_int_div(x, c1), odt)
    return r


@ti.func
def binary(op: ti.template(), x, y, s1, dt: ti.template(), odt: ti.template()):
    r = ti.cast(0, odt)
    if ti.static(op == BinaryOp.EQ):
        r = ti.cast(x == y, odt)
    elif ti.static(op == BinaryOp.GT):
        r = ti.cast(x > y, odt)
    elif ti.static(op == BinaryOp.GE):
        r = ti.cast(x >= y, odt)
    elif ti.static(op == BinaryOp.LT):
        r = ti.cast(x < y, odt)
    elif ti.static(op == BinaryOp.LE):
        r = ti.cast(x <= y, odt)
    elif ti.static(op == BinaryOp.AND):
        r = ti.cast((x != 0) & (y != 0), odt)
    elif ti.static(op == BinaryOp.OR):
        r = ti.cast((x != 0) | (y != 0), odt)
    elif ti.static(op == BinaryOp.FILL):
        r = ti.select(y != 0, ti.cast(s1, odt), ti.cast(x, odt))  # a select: see CLAMP
    elif ti.static(dt != ti.u8):
        if ti.static(op == BinaryOp.ADD):
            r = ti.cast(x + y, odt)
        elif ti.static(op == BinaryOp.SUB):
            r = ti.cast(x - y, odt)
        elif ti.static(op == BinaryOp.MUL):
            r = ti.cast(x * y, odt)
        elif ti.static(is_real(dt)):
            r = ti.cast(_div_pow(op, x, y, ti.f32 if dt == ti.f16 else dt), odt)
        elif ti.static(op == BinaryOp.DIV):
            r = ti.cast(_int_div(x, y), odt)
    return r


# Dense fast paths (see the module docstring): with unit inner strides, the
# most frequent cheap ops get a simple loop of their own.
@ti.func
def _dense1(op: ti.template(), out: ti.template(), a: ti.template(), oo, oa, j0, j1, s1,
            dt: ti.template(), odt: ti.template()):
    """COPY/cast, ADD_S, SUB_S, MUL_S over out[oo+j] = f(a[oa+j]); False for other ops."""
    done = True
    c = ti.cast(s1, dt)
    if ti.static(op == UnaryOp.COPY):
        for j in range(j0, j1):
            out[oo + j] = ti.cast(a[oa + j], odt)
    elif ti.static(dt == odt and dt != ti.u8):
        if ti.static(op == UnaryOp.ADD_S):
            for j in range(j0, j1):
                out[oo + j] = a[oa + j] + c
        elif ti.static(op == UnaryOp.SUB_S):
            for j in range(j0, j1):
                out[oo + j] = a[oa + j] - c
        elif ti.static(op == UnaryOp.MUL_S):
            for j in range(j0, j1):
                out[oo + j] = a[oa + j] * c
        else:
            done = False
    else:
        done = False
    return done


@ti.func
def _dense2(op: ti.template(), out: ti.template(), a: ti.template(), b: ti.template(), oo, oa, ob, j0, j1,
            dt: ti.template(), odt: ti.template()):
    """ADD, SUB, MUL (and DIV for floats) over out[oo+j] = a[oa+j] op b[ob+j]; False for other ops."""
    done = True
    if ti.static(dt == ti.u8 or odt != dt):  # bools, comparisons and mask_fill take the general loop
        done = False
    elif ti.static(op == BinaryOp.ADD):
        for j in range(j0, j1):
            out[oo + j] = a[oa + j] + b[ob + j]
    elif ti.static(op == BinaryOp.SUB):
        for j in range(j0, j1):
            out[oo + j] = a[oa + j] - b[ob + j]
    elif ti.static(op == BinaryOp.MUL):
        for j in range(j0, j1):
            out[oo + j] = a[oa + j] * b[ob + j]
    elif ti.static(is_real(dt)):  # (a static condition must stand alone to prune the branch)
        if ti.static(op == BinaryOp.DIV):
            for j in range(j0, j1):
                out[oo + j] = a[oa + j] / b[ob + j]
        else:
            done = False
    else:
        done = False
    return done


def _make_map1(S):
    @ti.kernel
    def map1(out: ti.types.ndarray(), a: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32,
             s1: S, s2: S, op: ti.template(), dt: ti.template(), odt: ti.template(), serial: ti.template()):
        ti.loop_config(serialize=serial)
        for u in range(ntask << tshift):
            if u & ((1 << tshift) - 1) != 0:
                continue
            t = u >> tshift
            nblk = meta[NBLK]
            row = ti.raw_div(t, nblk)
            j0 = (t - row * nblk) * meta[BLK]
            j1 = ti.min(j0 + meta[BLK], meta[INNER])
            o = row_offsets(meta, row, 2)
            st = inner_strides(meta, 2)
            done = False  # (Taichi's `and` does not short-circuit: nest the ifs)
            if st[0] == 1 and st[1] == 1:
                done = _dense1(op, out, a, o[0], o[1], j0, j1, s1, dt, odt)
            if not done:
                for j in range(j0, j1):
                    out[o[0] + j * st[0]] = unary(op, a[o[1] + j * st[1]], s1, s2, dt, odt)

    return map1


def _make_map2(S):
    @ti.kernel
    def map2(out: ti.types.ndarray(), a: ti.types.ndarray(), b: ti.types.ndarray(), meta: ti.types.ndarray(),
             ntask: ti.i32, tshift: ti.i32, s1: S, op: ti.template(), dt: ti.template(), odt: ti.template(),
             serial: ti.template()):
        ti.loop_config(serialize=serial)
        for u in range(ntask << tshift):
            if u & ((1 << tshift) - 1) != 0:
                continue
            t = u >> tshift
            nblk = meta[NBLK]
            row = ti.raw_div(t, nblk)
            j0 = (t - row * nblk) * meta[BLK]
            j1 = ti.min(j0 + meta[BLK], meta[INNER])
            o = row_offsets(meta, row, 3)
            st = inner_strides(meta, 3)
            done = False
            if st[0] == 1 and st[1] == 1 and st[2] == 1:
                done = _dense2(op, out, a, b, o[0], o[1], o[2], j0, j1, dt, odt)
            if not done:
                for j in range(j0, j1):
                    out[o[0] + j * st[0]] = binary(op, a[o[1] + j * st[1]], b[o[2] + j * st[2]], s1, dt, odt)

    return map2


@ti.kernel
def _map3(out: ti.types.ndarray(), a: ti.types.ndarray(), b: ti.types.ndarray(), m: ti.types.ndarray(),
          meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32, serial: ti.template()):
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        if u & ((1 << tshift) - 1) != 0:
            continue
        t = u >> tshift
        nblk = meta[NBLK]
        row = ti.raw_div(t, nblk)
        j0 = (t - row * nblk) * meta[BLK]
        j1 = ti.min(j0 + meta[BLK], meta[INNER])
        o = row_offsets(meta, row, 4)
        st = inner_strides(meta, 4)
        for j in range(j0, j1):
            v = a[o[1] + j * st[1]]
            if m[o[3] + j * st[3]] != 0:
                v = b[o[2] + j * st[2]]
            out[o[0] + j * st[0]] = v


# One kernel per scalar-argument type: scalars reach the kernel in the
# tensor's dtype (f16 tensors: an f32 argument holding an f16 value), so an
# f32 kernel never sees an f64 value (see the rules in kernels/__init__.py).
_map1 = {S: Kernel(_make_map1(S)) for S in (ti.f32, ti.f64, ti.i64)}
_map2 = {S: Kernel(_make_map2(S)) for S in (ti.f32, ti.f64, ti.i64)}
map3 = Kernel(_map3)

View = tuple  # (Buffer, strides, offset), strides aligned to the walked shape


_SCALAR = {id(ti.f16): ti.f32, id(ti.f32): ti.f32, id(ti.f64): ti.f64}

def _f16_scalar(s):
    """An f16 tensor's scalar, rounded to f16 here (once, as NumPy does); it
    travels as an f32 argument, which holds every f16 value exactly."""
    return float(np.float16(s))


def run(op: "UnaryOp | BinaryOp | TernaryOp", shape: tuple, out: View, ins: Sequence[View], s1=0, s2=0) -> None:
    """Walk `shape`, writing op(ins...) into `out` (all views aligned to `shape`).

    Scalars must be Python floats for float inputs and ints otherwise. `op`
    is a template argument: each op compiles into a kernel of its own.
    """
    a = ins[0]
    dt = a[0].dtype
    S = _SCALAR.get(id(dt), ti.i64)
    if dt is ti.f16:
        s1, s2 = _f16_scalar(s1), _f16_scalar(s2)
    ser = serial(prod(shape))
    if len(ins) == 1:
        meta, ntask = map_meta(op, shape, ((out[1], out[2]), (a[1], a[2])))
        _map1[S].launch(out[0], a[0], meta, ntask, loop_shift(ntask, ser), s1, s2, op, dt, out[0].dtype, ser)
    elif len(ins) == 2:
        b = ins[1]
        meta, ntask = map_meta(op, shape, ((out[1], out[2]), (a[1], a[2]), (b[1], b[2])))
        _map2[S].launch(out[0], a[0], b[0], meta, ntask, loop_shift(ntask, ser), s1, op, dt, out[0].dtype, ser)
    else:
        b, m = ins[1], ins[2]
        meta, ntask = map_meta(op, shape, ((out[1], out[2]), (a[1], a[2]), (b[1], b[2]), (m[1], m[2])))
        map3.launch(out[0], a[0], b[0], m[0], meta, ntask, loop_shift(ntask, ser), ser)
