"""Running a plan on the Taichi backend: generated sources cached on disk,
kernels cached by signature, outputs allocated, meta data built, one launch.

Generated kernels are `.py` files (Taichi reads a kernel's source) in
`fusion/` of burnbook's cache folder (`settings.cache_root()`, by default
`~/.cache/burnbook`), beside
Taichi's own offline cache of compiled kernels, so a second process reuses
both. A file is written atomically and only when missing or different.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from burnbook._atomic import atomic_write
from burnbook.kernels import layout, reduce as reduce_kernel
from burnbook.kernels.reduce import Reduce

from ..taichi import launcher, runtime
from ..taichi.ops import host_reduce
from ..taichi.primitive import alloc, contiguous_strides
from ..taichi.settings import SETTINGS, cache_root, serial
from . import codegen, rows
from .stream import FusionTensor, graph

_kernels: dict = {}  # plan signature -> (Launcher, source path, LaneLauncher or None)
_rows: dict = {}     # (plan signature, leaf pattern) -> LaneLauncher of fused_rows
STATS = {"compiled": 0, "executed": 0, "fused_ops": 0, "lanes": 0, "rows": 0}
_MAX_DIM_OPERANDS = 10  # a dim reduction keeps each operand's stride in the meta extras (11 slots)


def cache_dir() -> Path:
    """Where generated kernel sources live."""
    return cache_root() / "fusion"


def kernel_for(plan: codegen.Plan) -> tuple:
    """The plan's launcher, source path and lane launcher (None where the module has
    no `fused_lanes`), generating and importing the module on first use."""
    signature = plan.signature
    hit = _kernels.get(signature)
    if hit is not None:
        return hit
    module, path = _load(plan.key, codegen.source(plan))
    lanes = launcher.LaneLauncher(module.fused_lanes, codegen.LANES) if hasattr(module, "fused_lanes") else None
    hit = _kernels[signature] = (launcher.Launcher(module.fused), path, lanes)
    STATS["compiled"] += 1
    return hit


def _load(key: str, src: str) -> tuple:
    """The generated module `src` (written to the cache as fused_{key}.py
    when missing or different, then imported) and its path."""
    path = cache_dir() / f"fused_{key}.py"
    if not path.exists() or path.read_text() != src:
        atomic_write(path, lambda f: f.write(src.encode()))
    name = f"burnbook_fused_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, path


def rows_kernel(plan: codegen.Plan, kinds: tuple) -> launcher.LaneLauncher:
    """The plan's `fused_rows` (a map) or `fused_rows_reduce` (a reduction
    plan) for the operands' pattern `kinds` (rows.py)."""
    signature = (plan.signature, kinds)
    hit = _rows.get(signature)
    if hit is None:
        if plan.reduce is None:
            module, _ = _load(rows.key(plan, kinds), rows.source(plan, kinds))
            fn = module.fused_rows
        else:
            module, _ = _load(rows.key(plan, kinds, "rows_reduce"), rows.reduce_source(plan, kinds))
            fn = module.fused_rows_reduce
        hit = _rows[signature] = launcher.LaneLauncher(fn, codegen.LANES)
        STATS["compiled"] += 1
    return hit


def _lanes_on() -> bool:
    """SIMD lanes on: `SETTINGS.lanes`, on the CPU arch's fast launch path."""
    return bool(SETTINGS.lanes) and SETTINGS.launch == "fast" and runtime.current.simd


def _lanes(n: int, shape: tuple, leaves: list) -> bool:
    """Whether a stream over `shape` whose module has a `fused_lanes` runs
    it: SIMD lanes on (`_lanes_on`), whole vectors of elements, and every
    leaf dense in row-major order from element 0 (the outputs are new,
    hence dense)."""
    if n % codegen.LANES or not _lanes_on():
        return False
    full = contiguous_strides(shape)
    return all(leaf.value.shape == shape and leaf.value.offset == 0 and leaf.value.strides == full
               for leaf in leaves)


def _external(order: list, target: FusionTensor) -> list:
    """The lazy intermediates of `order` that something outside the graph
    still references: they become outputs too, so they are never computed twice.
    References inside are the consumers' input tuples, `order` itself, the
    loop variable and getrefcount's argument (CPython's counts). A miscount
    costs speed, never a wrong value: an extra output is just written, and a
    missed one stays lazy and is computed again when read."""
    inside = Counter(id(i) for t in order for i in t.node.inputs)  # (no loop variable outlives it)
    return [u for u in order if u is not target and sys.getrefcount(u) - 3 > inside.get(id(u), 0)]


def _operand_views(out_prims: list, leaves: list, shape: tuple) -> tuple:
    """(strides, offset) of every operand, broadcast to `shape`, outputs first."""
    return tuple(tuple(p.view(shape)[1:]) for p in out_prims) + tuple(
        tuple(leaf.value.view(shape)[1:]) for leaf in leaves)


def run(target: FusionTensor) -> None:
    """Compute the lazy `target` (and the referenced intermediates) in one kernel."""
    order, leaves = graph([target])
    outputs = [target] + _external(order, target)
    shape = target.shape
    prims = [alloc(u.shape, u.dtype, u.device) for u in outputs]
    n = math.prod(shape)
    if n:
        plan, scalars = codegen.plan(order, leaves, outputs)
        fused, _, lanes = kernel_for(plan)
        bufs = [p.buf for p in prims] + [leaf.value.buf for leaf in leaves]
        ser = serial(n)
        if lanes is not None and _lanes(n, shape, leaves):
            lanes(*bufs, n // codegen.LANES, *scalars, ser)
            STATS["lanes"] += 1
        else:
            views = _operand_views(prims, leaves, shape)
            meta, ntask = layout.map_meta(0, shape, views)
            # Broadcast operands: row lanes where every row splits into whole vectors (rows.py).
            kinds = rows.pattern(shape, views, len(prims), SETTINGS.block) if lanes is not None and _lanes_on() \
                else None
            if kinds is not None:
                rows_kernel(plan, kinds)(*bufs, meta, ntask, layout.loop_shift(ntask, ser), *scalars, ser)
                STATS["rows"] += 1
            else:
                fused(*bufs, meta, ntask, layout.loop_shift(ntask, ser), *scalars, ser)
        STATS["executed"] += 1
        STATS["fused_ops"] += len(order)
    for u, p in zip(outputs, prims):
        u.value, u.node = p, None


def _spare(order: list, external: list) -> list:
    """Mark the `external` intermediates that may stay lazy as spared; return
    the rest, which must be written."""
    if not external:
        return []
    tainted: set = set()
    for t in order:  # inputs come before their users
        if t.node.spared or any(id(i) in tainted for i in t.node.inputs):
            tainted.add(id(t))
    write = [u for u in external if id(u) in tainted]
    for u in external:
        if id(u) not in tainted:
            u.node.spared = True
    return write


def run_reduce(source: FusionTensor, op: Reduce, dim: int | None, mean: bool = False) -> FusionTensor | None:
    """Reduce the lazy `source` in the kernel that computes it: over every
    element (`dim` None; shape [1]) or along `dim` (kept, as size 1). None
    where the fused kernel does not apply (nothing to reduce, too many
    operands for a dim reduction, a float sum over a strided dim, which
    B runs faster on the host: taichi/ops/host_reduce.py); the caller then
    reduces unfused.

    Only the reduction is written, as a rule. `source` and the intermediates
    that something still references stay lazy and are computed when read, as
    XLA duplicates cheap producers: on the CPU arch a Taichi loop that stores
    through a scalar ndarray is not vectorised (ndarray pointers are reloaded
    after every store; only `fused_lanes` stores whole vectors), so
    one extra output costs more than computing it again on a later read. An
    intermediate is spared once: one whose graph holds a spared node (a
    parameter updated lazily step after step) is written, so no lazy chain
    grows across steps."""
    shape = source.shape
    count = math.prod(shape) if dim is None else shape[dim]
    if math.prod(shape) == 0:
        return None
    if dim is not None and host_reduce.applies(op, source.dtype, shape, contiguous_strides(shape), dim):
        # A sum across rows (not along the last dim): the kernel's task per kept
        # element would stride through the source; the caller runs the source
        # as a map (in SIMD lanes where it can) and B sums it on the host.
        return None
    order, leaves = graph([source])
    outputs = [source] + _spare(order, _external(order, source))
    if dim is not None and len(outputs) + len(leaves) > _MAX_DIM_OPERANDS:
        return None
    rt = runtime.current
    acc = rt.accumulator[source.dtype]
    acc_name = "ti.f64" if acc is rt.ti_dtype[np.dtype(np.float64)] else "ti.f32"
    plan, scalars = codegen.plan(order, leaves, outputs, (op, "all" if dim is None else "dim", acc_name))
    fused, _, lanes = kernel_for(plan)
    scale = 1.0 / count if mean else 1.0
    extra = [alloc(u.shape, u.dtype, u.device) for u in outputs[1:]]
    leaf_bufs = [leaf.value.buf for leaf in leaves]
    if dim is None:
        result = alloc((1,), source.dtype, source.device)
        views = (((0,) * len(shape), 0),) + _operand_views(extra, leaves, shape)
        meta, ntask = layout.map_meta(0, shape, views)
        partial = launcher.buffer(acc, ntask)
        ser = serial(count)
        if lanes is not None and not extra and _lanes(count, shape, leaves):
            # A dense shape is one run: map_meta's tasks take block_length(count) elements each.
            lanes(partial, *leaf_bufs, layout.block_length(count) // codegen.LANES, count // codegen.LANES, ntask,
                  layout.loop_shift(ntask, ser), *scalars, ser)
            STATS["lanes"] += 1
        else:
            fused(partial, *[p.buf for p in extra], *leaf_bufs, meta, ntask, layout.loop_shift(ntask, ser),
                     *scalars, 1.0, ser)
        reduce_kernel.run(op, (partial, (1,), 0), (ntask,), 0, result.buf, acc, scale)
    else:
        kept = shape[:dim] + (1,) + shape[dim + 1:]
        result = alloc(kept, source.dtype, source.device)
        views = ((tuple(0 if d == dim else s for d, s in enumerate(contiguous_strides(kept))), 0),)
        views += _operand_views(extra, leaves, shape)
        if _rows_reduce(plan, op, shape, dim, views):
            # A reduction along the row: SIMD row lanes, a task per row (rows.py).
            meta, ntask = layout.map_meta(0, shape, views)
            ser = serial(math.prod(shape))
            rows_kernel(plan, rows.pattern(shape, views, len(outputs), SETTINGS.block))(
                result.buf, *[p.buf for p in extra], *leaf_bufs, meta, ntask, layout.loop_shift(ntask, ser),
                *scalars, scale, ser)
            STATS["rows"] += 1
            _finish(order, outputs, extra)
            return result
        outer = shape[:dim] + shape[dim + 1:]
        extras = (count,) + tuple(st[dim] for st, _ in views)
        meta, ntask = layout.rows_meta(0, outer, tuple((st[:dim] + st[dim + 1:], off) for st, off in views), extras)
        ser = serial(math.prod(shape))
        fused(result.buf, *[p.buf for p in extra], *leaf_bufs, meta, ntask, layout.loop_shift(ntask, ser),
                 *scalars, scale, ser)
    _finish(order, outputs, extra)
    return result


def _finish(order: list, outputs: list, extra: list) -> None:
    """Count a reduction's stream and hand its written intermediates their values."""
    STATS["executed"] += 1
    STATS["fused_ops"] += len(order) + 1
    for u, p in zip(outputs[1:], extra):
        u.value, u.node = p, None


def _rows_reduce(plan: codegen.Plan, op: Reduce, shape: tuple, dim: int, views: tuple) -> bool:
    """Whether a dim reduction runs as `fused_rows_reduce`: a sum, max or
    min along the row in an f64 accumulator, lanes on, and every operand
    fits row lanes."""
    if op not in _ROW_OPS or plan.reduce[2] != "ti.f64" or not _lanes_on() or not codegen._lanes_fit(plan):
        return False
    kinds = rows.pattern(shape, views, len(plan.outputs), SETTINGS.block)
    return rows.reduce_fits(shape, dim, kinds, SETTINGS.block)


_ROW_OPS = (Reduce.SUM, Reduce.MAX, Reduce.MIN)
