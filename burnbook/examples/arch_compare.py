"""One small program run on several Taichi archs, one child process per arch.

Taichi has one runtime per process, tied to one arch: a process (a notebook
kernel) that made a tensor on the CPU cannot also use Vulkan. So chapter 05
runs `program` in a fresh Python process per arch, started with
`BURNBOOK_TAICHI_ARCH=<arch>`, and compares the outputs that come back.

    python -m burnbook.examples.arch_compare           # cpu against vulkan
    python -m burnbook.examples.arch_compare cpu cuda  # any archs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from burnbook import Tensor
from burnbook.backend import Autodiff
from burnbook.tensor import activation

_MODULE = "burnbook.examples.arch_compare"  # __name__ is "__main__" under -m
_CHILD_FLAG = "--child"


def program(B: Any, device: Any) -> dict[str, Tensor]:
    """A few ops of every kind on backend `B`: elementwise with scalars, a
    reduction along a dim and over 100,000 elements, a matmul with a
    broadcast bias, a softmax and an autodiff gradient."""
    x = Tensor[B, 2].from_floats([[1.0, -2.0, 0.5], [2.0, -0.25, -0.5]], device)
    w = Tensor[B, 2].from_floats([[0.5, -1.0], [1.5, 2.0], [-0.75, 0.25]], device)
    b = Tensor[B, 2].from_floats([[0.1, -0.2]], device)
    h = x.matmul(w) + b
    n = 100_000
    ramp = Tensor[B, 1].arange(0, n, device).float().div_scalar(n)

    AD = Autodiff[B]
    w_ad = Tensor[AD, 2].from_data(w.to_data(), device).require_grad()
    x_ad = Tensor[AD, 2].from_data(x.to_data(), device)
    grads = x_ad.matmul(w_ad).tanh().sum().backward()
    return {
        "x.exp() * 2 - 1": x.exp() * 2.0 - 1.0,
        "x.tanh().sum_dim(1)": x.tanh().sum_dim(1),
        "x @ w + b": h,
        "softmax(relu(x @ w + b), 1)": activation.softmax(activation.relu(h), 1),
        "sin(arange(100000) / 100000).mean()": ramp.sin().mean(),
        "grad of tanh(x @ w).sum() in w": w_ad.grad(grads),
    }


@dataclass
class ArchRun:
    """What one child process reported: the device its tensors ran on and
    their values, or why the arch could not start there (`unavailable`)."""

    arch: str
    device: str | None = None
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    devices: dict[str, str] = field(default_factory=dict)  # output name -> its tensor's device
    unavailable: str | None = None


class ArchChildError(RuntimeError):
    """The child process for an arch failed for a reason other than the arch
    being unavailable (a bad BURNBOOK_TAICHI_ARCH, an op that raised)."""


def run_in_child(arch: str, timeout: float = 300.0, env: dict[str, str] | None = None) -> ArchRun:
    """Run `program` on Taichi in a new Python process with
    `BURNBOOK_TAICHI_ARCH=arch` (`env`, if given, replaces this process's
    environment). An arch that cannot start there comes back with
    `unavailable` set; any other failure raises ArchChildError."""
    child_env = dict(os.environ if env is None else env, BURNBOOK_TAICHI_ARCH=arch)
    proc = subprocess.run([sys.executable, "-m", _MODULE, _CHILD_FLAG], env=child_env,
                          capture_output=True, text=True, timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
        raise ArchChildError(f"the child process for arch {arch!r} exited with {proc.returncode}:\n{tail}")
    report = json.loads(lines[-1])
    outputs = {name: np.asarray(v, dtype=np.float64) for name, v in report.get("outputs", {}).items()}
    return ArchRun(arch, report.get("device"), outputs, report.get("devices", {}), report.get("unavailable"))


def _child() -> None:
    """Run `program` on the arch BURNBOOK_TAICHI_ARCH names; one JSON line on stdout."""
    from burnbook.backend import Taichi
    from burnbook.backend.taichi import running_device

    device = Taichi.default_device()
    try:
        Tensor[Taichi, 1].from_floats([0.0], device)  # starts the runtime
    except RuntimeError as e:  # in a fresh process: this arch cannot start here
        print(json.dumps({"unavailable": str(e)}))
        return
    outputs = program(Taichi, device)
    print(json.dumps({"device": repr(running_device()),
                      "outputs": {k: t.to_numpy().tolist() for k, t in outputs.items()},
                      "devices": {k: repr(t.device()) for k, t in outputs.items()}}))


def fmt(values: np.ndarray, digits: int = 5) -> str:
    """`values` to `digits` significant digits, nested like the tensor: the
    precision at which archs and machines agree (-0 prints as 0)."""
    if np.ndim(values) == 0:
        return f"{float(values) + 0.0:.{digits}g}"
    return "[" + ", ".join(fmt(v, digits) for v in values) + "]"


def max_abs_diff(a: ArchRun, b: ArchRun) -> float:
    """The largest |a - b| over every output both runs share."""
    common = a.outputs.keys() & b.outputs.keys()
    return max((float(np.max(np.abs(a.outputs[k] - b.outputs[k]), initial=0.0)) for k in common),
               default=0.0)


def main(archs: Sequence[str] = ("cpu", "vulkan"), tol: float = 1e-5) -> int:
    """Print every output per arch, then whether each arch matches the first
    one to `tol`; 1 if one does not, 0 otherwise."""
    runs = [run_in_child(a) for a in archs]
    for r in runs:
        if r.unavailable:
            print(f"{r.arch}: not available here ({r.unavailable})")
    ran = [r for r in runs if not r.unavailable]
    for name in ran[0].outputs if ran else ():
        print(name)
        for r in ran:
            print(f"  {r.arch:<7} {fmt(r.outputs[name])}  device {r.devices[name]}")
    status = 0
    for r in ran[1:]:
        diff = max_abs_diff(ran[0], r)
        print(f"max |{ran[0].arch} - {r.arch}| = {diff:.1e} (tolerance {tol:g})")
        status |= diff > tol
    return int(status)


if __name__ == "__main__":
    if sys.argv[1:] == [_CHILD_FLAG]:
        _child()
    else:
        raise SystemExit(main(sys.argv[1:] or ("cpu", "vulkan")))
