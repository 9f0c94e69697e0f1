"""Fusion (issue 15): what `Fusion[Taichi]` buys on a chain, and what recording costs.

`chain10_sum`: the issue's element-wise chain ending in a sum,
`z = x*y + 1; z = exp(-z)*x; z = z - 0.5*y; z = clamp_min(z, 0); sum(z*z + x)`,
on two flat f32 tensors, written once per API and ending in reading the
scalar to the host (`float(...)`, `.item()`, `.into_scalar()`), so a lazy
backend is timed to the end of its work. On `Taichi` every op is a launch
and a full pass over memory; on `Fusion[Taichi]` the chain and its sum are
recorded and run as one generated kernel when the scalar is read. The check
compares each framework's scalar with NumPy's (relative 1e-4: the frameworks
sum 4M floats in different orders).

`record_add` and `record_chain`: the host cost of recording (issue 15's
"Dispatch" item). On `Fusion[Taichi]`, `x + y` on `[4]` whose result nothing
reads is recorded and never executed, so its time is the cost of recording
one op; `record_chain` records 32 adds into one chain (below the stream's
48-node limit, so it never executes inside the timed loop either) and the
INFO line gives the time per recorded op. NumPy and PyTorch run the same
statements eagerly, as the scale. The check reads one result (that executes
it) and compares it with NumPy's.

`adam_update`: Adam's update of one 1024 x 512 f32 weight written as
tensor ops, the 14 of `m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
w - lr * (m/c1) / (sqrt(v/c2) + eps)` (three divisions, one square root),
ending when the new weight and both moments are in memory (`B.sync()` on
burnbook: on `Fusion[Taichi]` one kernel writes all three). Chapter 24's
claim about SIMD lanes is this case's `fusion` row (`fused_lanes`, 8
elements per index) against `fusion_scalar` (the same backend with
`SETTINGS.lanes = 0`: the scalar `fused` kernel); `chain10_sum` runs on
both too, where the lanes are the fused sum's. The INFO lines give both
ratios as times.

The tracked add on 4 floats of `Autodiff[Fusion[Taichi]]` is the autodiff
family's `tracked_add` (the framework is one of its tracked frameworks), and
the guide CNN step is the training family's. This module also gives the
INFO lines about Fusion's kernel cache and Taichi's autotune table.
"""

from __future__ import annotations

import sys

import numpy as np

from ..formatting import fmt_size, fmt_time
from ..measurement import Case
from ..profiles import Profile

FAMILY = "fusion"
TITLE = "Fusion: fused element-wise chains and the cost of recording"
INTRO = (
    "`chain10_sum`: `z = x*y + 1; z = exp(-z)*x; z = z - 0.5*y; z = clamp_min(z, 0); "
    "sum(z*z + x)` on two flat f32 tensors, ending in reading the scalar to the host; "
    "millions of input elements per second, higher is better. Taichi launches one "
    "kernel per op; Fusion[Taichi] records the chain and runs it, with its sum, as "
    "one generated kernel when the scalar is read. `record_add`: `x + y` on `[4]`, "
    "result unread: on Fusion[Taichi] this is recorded and never executed (the "
    "cost of recording one op), NumPy and PyTorch compute it. `record_chain`: 32 "
    "adds recorded into one chain per call (never executed on Fusion[Taichi]); the "
    "INFO lines give the time per op. Ratios for the record cases are times: lower "
    "is better. `adam_update`: Adam's update of a 1024x512 f32 weight as 14 tensor ops "
    "(three divisions, a square root), ending with the weight and both moments written; "
    "millions of weight elements per second. `lanes off`: Fusion[Taichi] with "
    "`SETTINGS.lanes = 0`, its scalar fused kernel instead of `fused_lanes` (SIMD lanes)."
)

CHAIN_FRAMEWORKS = ("numpy", "taichi", "fusion", "fusion_scalar", "torch")
RECORD_FRAMEWORKS = ("numpy", "fusion", "torch")
ADAM_FRAMEWORKS = ("numpy", "taichi", "fusion", "fusion_scalar", "torch")
_ADAM_SHAPE = {"smoke": (16, 8)}
B1, B2, EPS, LR, STEP = 0.9, 0.999, 1e-8, 1e-3, 10   # Adam's defaults, at its 10th step
C1, C2 = 1 - B1 ** STEP, 1 - B2 ** STEP               # the bias corrections
CHAIN_LENGTH = 32            # adds per `record_chain` call; below the stream's MAX_NODES (48)
_CHAIN_SIZE = {"smoke": 1 << 12}


def chain_elements(profile: Profile) -> int:
    return _CHAIN_SIZE.get(profile.name, 1 << 22)


def chain_case_id(profile: Profile) -> str:
    return f"{FAMILY}/chain10_sum/{fmt_size(chain_elements(profile))}"


def adam_shape(profile: Profile) -> tuple[int, int]:
    return _ADAM_SHAPE.get(profile.name, (1024, 512))


def _adam_inputs(shape: tuple[int, int]):
    def make(rng: np.random.Generator) -> dict:
        return {"w": rng.standard_normal(shape).astype(np.float32),
                "g": rng.standard_normal(shape).astype(np.float32),
                "m": (0.1 * rng.standard_normal(shape)).astype(np.float32),
                "v": (0.01 * rng.random(shape)).astype(np.float32)}

    return make


def _flat(n: int):
    def make(rng: np.random.Generator) -> dict:
        return {"x": rng.uniform(-1, 1, n).astype(np.float32),
                "y": rng.uniform(-1, 1, n).astype(np.float32)}

    return make


# -- the chain, once per API -----------------------------------------------------------
def _chain_numpy(fw, ns):
    x, y = ns["x"], ns["y"]

    def chain():
        z = x * y + 1
        z = np.exp(-z) * x
        z = z - 0.5 * y
        z = np.maximum(z, 0)
        return float((z * z + x).sum())

    ns["chain"] = chain


def _chain_burnbook(fw, ns):
    x, y = ns["x"], ns["y"]

    def chain():
        z = x * y + 1
        z = (-z).exp() * x
        z = z - 0.5 * y
        z = z.clamp_min(0)
        return (z * z + x).sum().into_scalar()

    ns["chain"] = chain


def _chain_torch(fw, ns):
    torch, x, y = ns["torch"], ns["x"], ns["y"]

    def chain():
        z = x * y + 1
        z = torch.exp(-z) * x
        z = z - 0.5 * y
        z = torch.clamp_min(z, 0)
        return (z * z + x).sum().item()

    ns["chain"] = chain


# -- Adam's update, once per API ---------------------------------------------------------
def _adam_numpy(fw, ns):
    w, g, m, v = ns["w"], ns["g"], ns["m"], ns["v"]

    def adam():
        m2 = m * B1 + g * (1 - B1)
        v2 = v * B2 + g * g * (1 - B2)
        return w - m2 / C1 * LR / (np.sqrt(v2 / C2) + EPS)

    ns["adam"] = adam


def _adam_burnbook(fw, ns):
    w, g, m, v, backend = ns["w"], ns["g"], ns["m"], ns["v"], ns["B"]

    def adam():
        m2 = m * B1 + g * (1 - B1)
        v2 = v * B2 + g * g * (1 - B2)
        w2 = w - m2 / C1 * LR / ((v2 / C2).sqrt() + EPS)
        backend.sync()  # on Fusion[Taichi]: one kernel writes w2, m2 and v2
        return w2

    ns["adam"] = adam


def _adam_torch(fw, ns):
    torch, w, g, m, v = ns["torch"], ns["w"], ns["g"], ns["m"], ns["v"]

    def adam():
        m2 = m * B1 + g * (1 - B1)
        v2 = v * B2 + g * g * (1 - B2)
        return w - m2 / C1 * LR / (torch.sqrt(v2 / C2) + EPS)

    ns["adam"] = adam


# -- recording ------------------------------------------------------------------------
def _record_chain(fw, ns):
    x, y = ns["x"], ns["y"]

    def record_chain():
        z = x
        for _ in range(CHAIN_LENGTH):
            z = z + y
        return z

    ns["record_chain"] = record_chain


def cases(profile: Profile) -> list:
    n = chain_elements(profile)
    shape = adam_shape(profile)
    return [
        Case(FAMILY, "chain10_sum", fmt_size(n), _flat(n), {"*": "chain()"},
             work=float(n), unit="Melem/s", ratio="speed", tol=1e-4, frameworks=CHAIN_FRAMEWORKS,
             setup={"numpy": _chain_numpy, "burnbook": _chain_burnbook, "torch": _chain_torch}),
        Case(FAMILY, "adam_update", f"{shape[0]}x{shape[1]}", _adam_inputs(shape), {"*": "adam()"},
             work=float(shape[0] * shape[1]), unit="Melem/s", ratio="speed", tol=1e-5, frameworks=ADAM_FRAMEWORKS,
             setup={"numpy": _adam_numpy, "burnbook": _adam_burnbook, "torch": _adam_torch}),
        Case(FAMILY, "record_add", "4", _flat(4), {"*": "x + y"},
             ratio="time", tol=1e-6, frameworks=RECORD_FRAMEWORKS, tiny=True),
        Case(FAMILY, "record_chain", f"{CHAIN_LENGTH}x4", _flat(4), {"*": "record_chain()"},
             ratio="time", tol=1e-5, frameworks=RECORD_FRAMEWORKS, tiny=True,
             setup={"numpy": _record_chain, "burnbook": _record_chain, "torch": _record_chain}),
    ]


def info_lines(res) -> list:
    """Per-op recording cost, the chain's ratios, and the fused kernels compiled."""
    lines = []
    op = res.case.op
    if op == "record_add":
        t = res.median("fusion")
        if t is not None:
            others = ", ".join(f"{k} {fmt_time(res.median(k))}" for k in ("numpy", "torch")
                               if res.median(k) is not None)
            lines.append(f"INFO    recording one Fusion[Taichi] op (add on [4], never executed): {fmt_time(t)} "
                         f"(eager add: {others or 'not run'})")
    elif op == "record_chain":
        t = res.median("fusion")
        if t is not None:
            others = ", ".join(f"{k} {fmt_time(res.median(k) / CHAIN_LENGTH)}" for k in ("numpy", "torch")
                               if res.median(k) is not None)
            lines.append(f"INFO    recording a chain of {CHAIN_LENGTH} adds on [4] on Fusion[Taichi]: "
                         f"{fmt_time(t / CHAIN_LENGTH)} per op (eager, per add: {others or 'not run'})")
    elif op in ("chain10_sum", "adam_update"):
        for key in ("taichi", "fusion", "fusion_scalar", "torch"):
            r = res.ratio(key, "numpy")
            if r is not None:
                lines.append(f"INFO    {op} ({res.case.size}) on {key}: {fmt_time(res.median(key))} vs "
                             f"NumPy {fmt_time(res.median('numpy'))} ({r:.2f}x NumPy's speed)")
        lanes, scalar = res.median("fusion"), res.median("fusion_scalar")
        if lanes is not None and scalar:
            lines.append(f"INFO    {op} ({res.case.size}) on Fusion[Taichi], SIMD lanes on vs off: {fmt_time(lanes)} "
                         f"vs {fmt_time(scalar)} ({lanes / scalar:.2f}x the scalar kernel's time)")
    return lines


def stats_line() -> str | None:
    """`Fusion[Taichi].stats()` after the run (None when Fusion was never loaded):
    how many fused kernels were compiled for how many executed streams."""
    module = sys.modules.get("burnbook.backend.fusion")
    if module is None:
        return None
    s = module.Fusion.stats()
    return ("INFO    Fusion[Taichi] over the run: " + ", ".join(f"{k} {v:,}" for k, v in s.items())
            + " (compiled: fused kernels generated or loaded; executed: streams run)")


def autotune_lines() -> list:
    """The autotune table on disk at the end of the run (none when Taichi's
    module ops were never loaded): each shape class's choice and the times
    behind it, so a CNN number on Taichi can be read with the conv variant
    that produced it (a choice timed on a busy machine stays until the file
    is deleted)."""
    module = sys.modules.get("burnbook.backend.taichi.autotune")
    if module is None:
        return []
    lines = []
    for key, entry in sorted(module.table().items()):
        times = ", ".join(f"{name} {us / 1e3:.1f} ms" for name, us in entry.get("us", {}).items())
        lines.append(f"INFO    autotune {key}: {entry.get('choice')} ({times}; from {module.cache_path()})")
    return lines
