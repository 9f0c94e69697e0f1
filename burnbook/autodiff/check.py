"""`check_grad`: compare backward's gradients with central finite differences.

The finite differences are taken in float64 whatever the inputs' dtype, so a
float32 backward is checked against an accurate reference. The output is
contracted with a fixed random cotangent `w` (the checked scalar is
`sum(fn(*xs) * w)`), so a gradient sent to the wrong element is caught even
where a ones seed would hide it. This is the tool to run on a custom op or
kernel: it catches silent failures such as a Taichi kernel whose `kernel.grad`
reads a value it has overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .graph import AutodiffTensor

_TOLERANCES = {np.dtype(np.float64): (1e-6, 1e-7), np.dtype(np.float32): (1e-3, 1e-4),
               np.dtype(np.float16): (1e-2, 1e-2)}


class GradCheckError(AssertionError):
    """Raised by `check_grad` when a gradient does not match; the message is the report."""


@dataclass
class InputCheck:
    """The comparison for one input: worst absolute and relative error and where."""

    name: str
    shape: tuple
    max_abs: float
    max_rel: float
    worst_index: tuple
    analytic: float
    numeric: float
    ok: bool
    missing: bool = False   # backward returned no gradient (None) for this input
    against: str = "finite diff"   # what `numeric` is: finite differences or the reference's gradient

    def line(self) -> str:
        status = "ok  " if self.ok else "FAIL"
        where = f"at {list(self.worst_index)}: backward {self.analytic:.7g}, {self.against} {self.numeric:.7g}"
        miss = " (backward gave no gradient)" if self.missing else ""
        return (f"{status} {self.name} {list(self.shape)}: max abs err {self.max_abs:.3g}, "
                f"max rel err {self.max_rel:.3g}{miss}; worst {where}")


@dataclass
class GradCheckResult:
    """What `check_grad` found; `ok` is True when every input passed."""

    inputs: list = field(default_factory=list)
    rtol: float = 0.0
    atol: float = 0.0
    forward: str | None = None   # a forward mismatch against `reference`, if any

    @property
    def ok(self) -> bool:
        return self.forward is None and all(c.ok for c in self.inputs)

    def __str__(self) -> str:
        head = f"check_grad (rtol {self.rtol:g}, atol {self.atol:g}): {'passed' if self.ok else 'FAILED'}"
        lines = [head] + ["  " + c.line() for c in self.inputs]
        if self.forward:
            lines.append("  FAIL forward: " + self.forward)
        return "\n".join(lines)

    __repr__ = __str__


def check_grad(fn: Callable, *inputs: Any, backend: type | None = None,
               names: Sequence[str] | None = None, eps: float = 1e-6,
               rtol: float | None = None, atol: float | None = None, seed: int = 0,
               reference: Callable | None = None, raise_error: bool = True) -> GradCheckResult:
    """Check `fn`'s backward against central finite differences (float64).

    `fn(*xs)` maps Float primitives of the Autodiff backend `backend` to one
    Float primitive; `inputs` are NumPy arrays or that backend's primitives
    (any shapes). Or: `inputs` are `Tensor`s of an Autodiff backend and `fn`
    maps Tensors to a Tensor (`backend` is then taken from them; `reference`
    then maps Tensors too). Every input is checked. Tolerances default to rtol 1e-3 /
    atol 1e-4 for a float32 backward and 1e-6 / 1e-7 for float64; an element
    passes when |backward - fd| <= atol + rtol * |fd|. With `reference`, the
    forward and gradients of `fn` are also compared with those of
    `reference(*xs)` (e.g. a fused kernel against its composition).
    Raises `GradCheckError` with a report naming the input, the max abs/rel
    error and where, unless `raise_error=False`; returns the result.
    """
    if inputs and _is_tensor(inputs[0]):
        tensors = inputs
        fn, inputs, backend = _on_primitives(fn, tensors)
        if reference is not None:
            reference = _on_primitives(reference, tensors)[0]
    B = backend
    if B is None:
        raise TypeError("check_grad: pass backend=Autodiff[...] (the backend the inputs live on)")
    if not getattr(B, "is_autodiff", False):
        raise TypeError(f"check_grad: backend {B.name()!r} has no autodiff; wrap it in Autodiff[...]")
    inner = B.InnerBackend
    device = B.default_device()
    hosts = [_host(B, x) for x in inputs]
    for x in inputs:
        if isinstance(x, AutodiffTensor):
            device = B.float_device(x)
            break
    names = list(names) if names is not None else [f"input {i}" for i in range(len(hosts))]
    dtype = np.result_type(*[h.dtype for h in hosts])
    d_rtol, d_atol = _TOLERANCES.get(np.dtype(dtype), (1e-3, 1e-4))
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol

    analytic, out_shape, w = _backward(B, fn, hosts, device, seed)
    result = GradCheckResult(rtol=rtol, atol=atol)
    numeric = _finite_differences(B, fn, hosts, device, w, eps)
    if reference is not None:
        ref_grads, ref_shape, _ = _backward(B, reference, hosts, device, seed)
        result.forward = _compare_forward(B, fn, reference, hosts, device, rtol, atol)
        for i, rg in enumerate(ref_grads):
            result.inputs.append(_compare(f"{names[i]} vs reference", analytic[i], rg, rtol, atol,
                                            against="reference"))
    for i, (a, n) in enumerate(zip(analytic, numeric)):
        result.inputs.append(_compare(names[i], a, n, rtol, atol))
    if raise_error and not result.ok:
        raise GradCheckError(str(result))
    return result


def _is_tensor(x: Any) -> bool:
    return hasattr(x, "into_primitive") and hasattr(type(x), "from_primitive")


def _on_primitives(fn: Callable, tensors: tuple) -> tuple:
    """Tensors in, Tensors out -> the same check on their primitives."""
    types = [type(t) for t in tensors]
    backend = types[0]._B

    def on_prims(*ps):
        return fn(*[cls.from_primitive(p) for cls, p in zip(types, ps)]).into_primitive()
    return on_prims, [t.into_primitive() for t in tensors], backend


def _host(B: type, x: Any) -> np.ndarray:
    if isinstance(x, AutodiffTensor):
        return np.asarray(B.float_into_data(x))
    a = np.asarray(x)
    if a.dtype.kind != "f":
        a = a.astype(np.float32)
    return a


def _prim(B: type, a: np.ndarray, device: Any, dtype: Any = None) -> AutodiffTensor:
    p = B.float_from_data(a if dtype is None else a.astype(dtype), device)
    if dtype is not None and np.dtype(B.float_dtype(p)) != np.dtype(dtype):
        p = B.float_cast(p, dtype)
    return p


def _backward(B: type, fn: Callable, hosts: list, device: Any, seed: int):
    """Gradients of sum(fn(*xs) * w) by backward, with the random cotangent w."""
    leaves = [B.float_require_grad(_prim(B, h, device)) for h in hosts]
    out = fn(*leaves)
    shape = tuple(B.float_shape(out))
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    wp = _prim(B, w, device, B.float_dtype(out))
    grads = B.float_backward(B.float_sum(B.float_mul(out, wp)))
    got = []
    for leaf, h in zip(leaves, hosts):
        g = B.float_grad(leaf, grads)
        got.append(None if g is None else np.asarray(B.InnerBackend.float_into_data(g), dtype=np.float64))
    return got, shape, w


def _finite_differences(B: type, fn: Callable, hosts: list, device: Any, w: np.ndarray, eps: float):
    base = [h.astype(np.float64) for h in hosts]

    def scalar(xs):
        out = fn(*[_prim(B, x, device, np.float64) for x in xs])
        return float(np.sum(np.asarray(B.float_into_data(out), dtype=np.float64) * w))

    grads = []
    for i, x in enumerate(base):
        g = np.zeros_like(x)
        flat = x.reshape(-1)
        gflat = g.reshape(-1)
        for j in range(flat.size):
            keep = flat[j]
            flat[j] = keep + eps
            fp = scalar(base)
            flat[j] = keep - eps
            fm = scalar(base)
            flat[j] = keep
            gflat[j] = (fp - fm) / (2.0 * eps)
        grads.append(g)
    return grads


def _compare(name: str, a: np.ndarray | None, n: np.ndarray, rtol: float, atol: float,
             against: str = "finite diff") -> InputCheck:
    missing = a is None
    if missing:
        a = np.zeros_like(n)
    a = np.broadcast_to(a, n.shape) if a.shape != n.shape and a.size == 1 else a
    if a.shape != n.shape:
        return InputCheck(name, n.shape, float("inf"), float("inf"), (), float("nan"), float("nan"),
                          False, missing, against)
    err = np.abs(a - n)
    rel = err / np.maximum(np.abs(n), 1e-12)
    bad = err - (atol + rtol * np.abs(n))
    if n.size == 0:
        return InputCheck(name, n.shape, 0.0, 0.0, (), 0.0, 0.0, True, missing, against)
    worst = np.unravel_index(int(np.nanargmax(np.where(np.isnan(bad), np.inf, bad))), n.shape)
    ok = bool(np.all(bad <= 0)) and not (missing and np.any(n != 0))
    return InputCheck(name, n.shape, float(np.max(err)), float(np.max(rel)), tuple(int(i) for i in worst),
                      float(a[worst]), float(n[worst]), ok, missing, against)


def _compare_forward(B, fn, reference, hosts, device, rtol, atol) -> str | None:
    xs = [_prim(B, h, device) for h in hosts]
    a = np.asarray(B.float_into_data(fn(*xs)), dtype=np.float64)
    b = np.asarray(B.float_into_data(reference(*xs)), dtype=np.float64)
    if a.shape != b.shape:
        return f"output shapes differ: {list(a.shape)} vs reference {list(b.shape)}"
    err = np.abs(a - b)
    if np.all(err <= atol + rtol * np.abs(b)):
        return None
    i = np.unravel_index(int(np.argmax(err)), a.shape)
    return f"outputs differ by up to {float(err[i]):.3g} at {list(i)} ({a[i]:.7g} vs reference {b[i]:.7g})"
