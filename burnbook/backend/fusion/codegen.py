"""From a recorded graph to a fused Taichi kernel: the plan, its shape-free
signature, and the kernel's source.

A plan numbers the graph's operands: outputs first (the tensor asked for, and
every intermediate that something outside the graph still references), then
the ready leaves it reads. Each node becomes one line calling the same
`@ti.func` the unfused kernels use (`elementwise.unary`/`binary`), so a fused
result matches the unfused one. The kernel walks the output shape as the
unfused kernels do (kernels/layout.py): the shape, strides and broadcasting
are run-time meta data, so the signature holds only dtypes, the op sequence
and which operand each op reads, and a training loop compiles once. A map's
module also defines `fused_lanes`, the same ops LANES elements at a time for
dense operands (SIMD on the CPU arch).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from burnbook.kernels.elementwise import BinaryOp, TernaryOp, UnaryOp
from burnbook.kernels.reduce import Reduce

_TI_NAME = {np.dtype(np.float32): "ti.f32", np.dtype(np.float64): "ti.f64", np.dtype(np.float16): "ti.f16",
            np.dtype(np.int64): "ti.i64", np.dtype(np.bool_): "ti.u8"}
_SCALAR_TYPE = {np.dtype(np.float64): "ti.f64"}  # others: f32 (an f16 scalar is rounded on the host)


@dataclass
class Plan:
    """What one fused kernel computes, in operand numbers.

    `steps` are (value number, code, argument value numbers, scalar slots,
    dtype of the first argument, output dtype); value numbers below
    `len(leaves)` are the leaves, in order. `reduce` is None, or
    (Reduce member, "all" or "dim", accumulator dtype name)."""

    outputs: list
    leaves: list
    steps: list = field(default_factory=list)
    out_values: list = field(default_factory=list)
    scalar_types: list = field(default_factory=list)
    reduce: tuple | None = None

    @property
    def signature(self) -> tuple:
        """What the kernel depends on, shapes excluded: hashable, cheap to build."""
        steps = tuple((c, a, tuple(s), dt, odt) for _, c, a, s, dt, odt in self.steps)
        return (tuple(t.dtype for t in self.leaves), steps, tuple(self.out_values),
                tuple(t.dtype for t in self.outputs), tuple(self.scalar_types), self.reduce)

    @property
    def key(self) -> str:
        """The signature as a file name: stable across processes (enum members
        and NumPy dtypes have a stable repr)."""
        return hashlib.sha1(repr(self.signature).encode()).hexdigest()[:20]


def plan(order: list, leaves: list, outputs: list, reduce: tuple | None = None) -> tuple[Plan, list]:
    """The plan for computing `outputs` (lazy tensors of `order`) from
    `leaves`, and the scalar values in slot order."""
    p = Plan(outputs=outputs, leaves=leaves, reduce=reduce)
    number = {id(t): i for i, t in enumerate(leaves)}
    scalars: list = []
    for t in order:
        node = t.node
        args = tuple(number[id(i)] for i in node.inputs)
        first = node.inputs[0].dtype
        slots = []
        for s in node.scalars:
            slots.append(len(scalars))
            scalars.append(float(np.float16(s)) if first == np.float16 else float(s))
            p.scalar_types.append(_SCALAR_TYPE.get(first, "ti.f32"))
        number[id(t)] = len(leaves) + len(p.steps)
        p.steps.append((number[id(t)], node.code, args, slots, first, t.dtype))
    p.out_values = [number[id(t)] for t in outputs]
    return p, scalars


def _expr(code, args: tuple, slots: list, dt: np.dtype, odt: np.dtype, lane: str = "") -> str:
    v = [f"v{a}{lane}" for a in args]
    s = [f"s{k}" for k in slots] + ["0", "0"]
    d, o = _TI_NAME[np.dtype(dt)], _TI_NAME[np.dtype(odt)]
    if isinstance(code, UnaryOp):
        return f"unary(UnaryOp.{code.name}, {v[0]}, {s[0]}, {s[1]}, {d}, {o})"
    if isinstance(code, BinaryOp):
        return f"binary(BinaryOp.{code.name}, {v[0]}, {v[1]}, {s[0]}, {d}, {o})"
    if code is TernaryOp.WHERE:  # x, values, mask
        return f"ti.select({v[2]} != 0, {v[1]}, {v[0]})"
    raise ValueError(f"fusion: no code for {code!r}")


def _body(p: Plan, index: str, indent: str) -> list:
    """The per-element lines: load the leaves, compute, store the outputs.
    `index(j)` is the element offset expression of operand j."""
    nout = len(p.outputs)
    lines = [f"v{j} = x{j}[{index(nout + j)}]" for j in range(len(p.leaves))]
    lines += [f"v{k} = {_expr(c, a, s, dt, odt)}" for k, c, a, s, dt, odt in p.steps]
    for m, (t, k) in enumerate(zip(p.outputs, p.out_values)):
        if p.reduce is None or m > 0:
            lines.append(f"out{m}[{index(m)}] = ti.cast(v{k}, {_TI_NAME[np.dtype(t.dtype)]})")
    return [indent + line for line in lines]


def _accumulate(p: Plan, indent: str) -> list:
    """Fold the reduced value (the first output's) into `acc` (and `comp`)."""
    op, _, adt = p.reduce
    v = f"ti.cast(v{p.out_values[0]}, {adt})"
    if op is Reduce.SUM and adt == "ti.f32":  # Neumaier, as kernels/reduce.py sums f32 on SPIR-V
        lines = [f"r = {v}", "tot = acc + r", "if ti.abs(acc) >= ti.abs(r):", "    comp += (acc - tot) + r",
                 "else:", "    comp += (r - tot) + acc", "acc = tot"]
    elif op is Reduce.SUM:
        lines = [f"acc += {v}"]
    else:
        lines = [f"r = {v}", f"if _beats(Reduce.{op.name}, r, acc, {adt}):", "    acc = r"]
    return [indent + line for line in lines]


def source(p: Plan) -> str:
    """A `.py` module defining `fused`, the plan's kernel."""
    nout, nops = len(p.outputs), len(p.outputs) + len(p.leaves)
    params = [f"out{m}: ti.types.ndarray()" for m in range(nout)]
    params += [f"x{j}: ti.types.ndarray()" for j in range(len(p.leaves))]
    params += ["meta: ti.types.ndarray()", "ntask: ti.i32", "tshift: ti.i32"]
    params += [f"s{k}: {ty}" for k, ty in enumerate(p.scalar_types)]
    if p.reduce is not None:
        params += [f"scale: {p.reduce[2]}"]  # 1/n for a mean, else 1
    params += ["serial: ti.template()"]
    head = [
        f"# Generated by burnbook.backend.fusion: one kernel for {len(p.steps)} fused op(s).",
        "# " + "; ".join(f"v{k} = {c.name.lower()}({', '.join(f'v{a}' for a in args)})"
                         for k, c, args, *_ in p.steps),
        "import taichi as ti", "",
        "from burnbook.kernels.elementwise import BinaryOp, UnaryOp, binary, unary",
        "from burnbook.kernels.layout import BLK, E0, INNER, NBLK, inner_strides, row_offsets",
        "from burnbook.kernels.reduce import Reduce, _beats", "", f"LANES = {LANES}", "", "",
        "@ti.kernel",
        f"def fused({', '.join(params)}):",
        "    ti.loop_config(serialize=serial)",
        "    for u in range(ntask << tshift):",
        "        if u & ((1 << tshift) - 1) != 0:",
        "            continue",
        "        t = u >> tshift",
    ]
    if p.reduce is not None and p.reduce[1] == "dim":
        return "\n".join(head + _dim_loop(p, nops)) + "\n"
    walk = [
        "        nblk = meta[NBLK]",
        "        row = ti.raw_div(t, nblk)",
        "        j0 = (t - row * nblk) * meta[BLK]",
        "        j1 = ti.min(j0 + meta[BLK], meta[INNER])",
        f"        o = row_offsets(meta, row, {nops})",
        f"        st = inner_strides(meta, {nops})",
    ]
    if p.reduce is not None:
        lines = head + walk + _all_loop(p, nops)
        if p.reduce[0] is Reduce.SUM and p.reduce[2] == "ti.f64" and len(p.outputs) == 1 and _lanes_fit(p):
            lines += ["", ""] + _lane_sum_kernel(p)
        return "\n".join(lines) + "\n"
    lines = head + walk + [f"        if {_dense(range(nops))}:", "            for jj in range(j0, j1):"]
    lines += _body(p, lambda j: "jj", " " * 16)
    lines += ["        else:", "            for jj in range(j0, j1):"]
    lines += _body(p, lambda j: f"o[{j}] + jj * st[{j}]", " " * 16)
    return "\n".join(lines + (["", ""] + _lane_kernel(p) if _lanes_fit(p) else [])) + "\n"


_EACH_LANE = "for lane in ti.static(range(LANES))"


def _lanes_fit(p: Plan) -> bool:
    """Whether the plan gets a `fused_lanes`: no f16 anywhere in it (f16
    keeps the scalar kernel)."""
    f16 = np.dtype(np.float16)
    return f16 not in {t.dtype for t in p.leaves + p.outputs} | {d for *_, dt, odt in p.steps for d in (dt, odt)}


def _vec_param(dtype) -> str:
    return f"ti.types.ndarray(dtype=ti.types.vector(LANES, {_TI_NAME[np.dtype(dtype)]}), ndim=1)"


def _lane_steps(p: Plan) -> list:
    """The loads of the vector index q and the steps, lane by lane."""
    lines = [f"v{j} = x{j}[q]" for j in range(len(p.leaves))]
    return lines + [f"v{k} = ti.Vector([{_expr(c, a, s, dt, odt, '[lane]')} {_EACH_LANE}])"
                    for k, c, a, s, dt, odt in p.steps]


def _lane_sum_kernel(p: Plan) -> list:
    """`fused_lanes` of a full f64 sum over dense operands: task t folds
    vectors [t * per, (t + 1) * per) into LANES running sums, lane l taking
    the elements l, l + LANES, ..., and writes their total to out0[t] (a
    partial). Those are `fused`'s dense loop's sums in the same order, so the
    same bits; the vector-typed loads make the math SIMD (see `_lane_kernel`)."""
    params = ["out0: ti.types.ndarray()"] + [f"x{j}: {_vec_param(t.dtype)}" for j, t in enumerate(p.leaves)]
    params += ["per: ti.i32", "nvec: ti.i32", "ntask: ti.i32", "tshift: ti.i32"]
    params += [f"s{k}: {ty}" for k, ty in enumerate(p.scalar_types)] + ["serial: ti.template()"]
    lines = ["@ti.kernel", f"def fused_lanes({', '.join(params)}):", "    ti.loop_config(serialize=serial)",
             "    for u in range(ntask << tshift):", "        if u & ((1 << tshift) - 1) != 0:",
             "            continue", "        t = u >> tshift",
             "        lanes = ti.Vector([0.0] * LANES, ti.f64)",
             "        for q in range(t * per, ti.min(t * per + per, nvec)):"]
    lines += [" " * 12 + line for line in _lane_steps(p)]
    lines += [f"            lanes += ti.Vector([ti.cast(v{p.out_values[0]}[lane], ti.f64) {_EACH_LANE}])",
              "        acc = ti.cast(0, ti.f64)",
              f"        {_EACH_LANE}:",
              "            acc += lanes[lane]",
              "        out0[t] = acc"]
    return lines


def _lane_kernel(p: Plan) -> list:
    """`fused_lanes`: the same map over dense operands, LANES elements per
    index, each operand a vector-typed ndarray over its flat buffer
    (launcher.LaneLauncher). Lane l of every step is the scalar step on lane
    l, so the results are those of `fused`; on the CPU arch, where vectors
    are not scalarised, a vector access is one SIMD load or store and LLVM
    vectorises the lanes' math (a store through a scalar ndarray reloads
    every pointer and keeps `fused`'s loop scalar)."""
    params = [f"out{m}: {_vec_param(t.dtype)}" for m, t in enumerate(p.outputs)]
    params += [f"x{j}: {_vec_param(t.dtype)}" for j, t in enumerate(p.leaves)]
    params += ["nvec: ti.i32"] + [f"s{k}: {ty}" for k, ty in enumerate(p.scalar_types)] + ["serial: ti.template()"]
    lines = ["@ti.kernel", f"def fused_lanes({', '.join(params)}):", "    ti.loop_config(serialize=serial)",
             "    for q in range(nvec):"]
    lines += [" " * 8 + line for line in _lane_steps(p)]
    lines += [f"        out{m}[q] = ti.Vector([ti.cast(v{k}[lane], {_TI_NAME[np.dtype(t.dtype)]}) {_EACH_LANE}])"
              for m, (t, k) in enumerate(zip(p.outputs, p.out_values))]
    return lines


LANES = 8  # elements per index of `fused_lanes`, and lane sums of a dense full sum


def _dense(operands: range) -> str:
    """The condition for the plain loop: every operand contiguous along the
    row and starting at element 0, so one index `jj` addresses them all. A
    per-operand offset costs a sign extension and an add per access that LLVM
    cannot fold (about 15 % on a memory-bound kernel), and a row that needs
    one gains nothing over the strided loop, so it takes that."""
    return " and ".join(f"st[{j}] == 1 and o[{j}] == 0" for j in operands)


def _all_loop(p: Plan, nops: int) -> list:
    """A full reduction: each task folds its block into out0[t] (a partial).
    Dense operands take a loop without stride multiplies (out0, the
    partials, has no inner stride)."""
    adt = p.reduce[2]
    lines = [f"        acc = ti.cast(0, {adt})", f"        comp = ti.cast(0, {adt})",
             f"        if {_dense(range(1, nops))}:"]
    if p.reduce[0] is Reduce.SUM and adt == "ti.f64":
        lines += _lane_sum(p)
    else:
        lines += _fold(p, "j0", "j1", lambda j: "jj", "    ")
    lines += ["        else:"]
    lines += _fold(p, "j0", "j1", lambda j: f"o[{j}] + jj * st[{j}]", "    ")
    return lines + ["        out0[t] = acc + comp"]  # partials stay in the accumulator dtype


def _lane_sum(p: Plan) -> list:
    """A dense sum, LANES elements a step into LANES accumulators. Taichi
    kernels run without fast-math, so LLVM may not reorder a single running
    sum and leaves that loop scalar; independent lanes it vectorises (the
    issue's chain: 3x less CPU time). The tail runs element by element."""
    v = f"ti.cast(v{p.out_values[0]}, ti.f64)"
    lines = ["            nq = (j1 - j0) // LANES",
             "            lanes = ti.Vector([0.0] * LANES, ti.f64)",
             "            for q in range(nq):",
             "                for lane in ti.static(range(LANES)):",
             "                    jj = j0 + q * LANES + lane"]
    lines += _body(p, lambda j: "jj", " " * 20)
    lines += [f"                    lanes[lane] += {v}",
              "            for jj in range(j0 + nq * LANES, j1):"]
    lines += _body(p, lambda j: "jj", " " * 16)
    lines += [f"                acc += {v}",
              "            for lane in ti.static(range(LANES)):",
              "                acc += lanes[lane]"]
    return lines


def _fold(p: Plan, start: str, stop: str, index, pad: str = "") -> list:
    """Fold the first output over jj in [start, stop) into acc (+ comp),
    which the caller declares (Taichi scopes a name to its branch)."""
    op, _, adt = p.reduce
    lines = [f"        for jj in range({start}, {stop}):"] + _body(p, index, " " * 12)
    if op is Reduce.SUM:
        lines += _accumulate(p, " " * 12)
    else:
        lines += [f"            if jj == {start}:", f"                acc = ti.cast(v{p.out_values[0]}, {adt})",
                  "            else:"]
        lines += _accumulate(p, " " * 16)
    return [pad + line for line in lines]


def _dim_loop(p: Plan, nops: int) -> list:
    """A reduction along one dim: a task per output element walks the dim;
    meta[E0] is its length and meta[E0 + 1 + j] operand j's stride along it."""
    odt = _TI_NAME[np.dtype(p.outputs[0].dtype)]
    lines = [f"        o = row_offsets(meta, t, {nops})", "        R = meta[E0]",
             f"        acc = ti.cast(0, {p.reduce[2]})", f"        comp = ti.cast(0, {p.reduce[2]})"]
    lines += _fold(p, "0", "R", lambda j: f"o[{j}] + jj * meta[E0 + 1 + {j}]")
    return lines + [f"        out0[o[0]] = ti.cast((acc + comp) * scale, {odt})"]
