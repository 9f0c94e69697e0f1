"""The frameworks compared, behind one small adapter.

Each `Framework` turns the case's NumPy inputs into its own tensors, gives the
statements their helper names, syncs, and converts results back for the
correctness check. A framework that cannot be imported or fails a one-line
probe is kept with `available=False` and the reason, so the report can say
why its column is empty instead of silently leaving it out.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from .formatting import short_error


def _noop() -> None:
    return None


@dataclass
class Framework:
    key: str                 # "numpy", "ndarray", "taichi", "fusion", "autodiff", "autodiff_taichi", ..., "torch"
    label: str               # as printed in the report
    api: str                 # "numpy" | "burnbook" | "torch"
    available: bool = True
    note: str = ""           # why unavailable, or thread/arch details
    backend: Any = None      # burnbook backend class
    device: Any = None
    sync: Callable[[], None] = _noop
    helpers: dict = field(default_factory=dict)
    enter: Callable[[], None] = _noop    # called before each timed run (outside the timer)
    exit: Callable[[], None] = _noop     # and after it
    families: tuple | None = None        # families it runs in by default (None: all);
                                         # a case naming it in `frameworks` always runs it
    threads: int | None = None           # PyTorch's intra-op threads (torch only), for the bars' titles

    def tensor(self, a: np.ndarray):
        if self.api == "numpy":
            return np.array(a, copy=True)
        if self.api == "torch":
            import torch

            return torch.from_numpy(np.array(a, copy=True))
        from burnbook import Tensor

        return Tensor[self.backend, a.ndim].from_data(a, self.device)

    def namespace(self, inputs: dict) -> dict:
        ns = dict(self.helpers)
        for name, a in inputs.items():
            ns[name] = self.tensor(a)
        return ns

    def to_numpy(self, obj) -> np.ndarray:
        if isinstance(obj, (int, float, np.generic, np.ndarray)):
            return np.asarray(obj)   # a value already on the host (e.g. a read scalar)
        if self.api == "torch":
            return obj.detach().cpu().numpy()
        if self.api == "burnbook":
            return obj.to_numpy()
        return np.asarray(obj)


ORDER = ("numpy", "ndarray", "taichi", "fusion", "fusion_scalar", "autodiff", "autodiff_taichi", "autodiff_fusion",
         "torch", "onnxruntime", "numpy_1t", "ndarray_1t", "autodiff_1t", "autodiff_fusion_1t", "torch_1t",
         "onnxruntime_1t")
TAICHI_KEYS = ("taichi", "fusion", "fusion_scalar", "autodiff_taichi", "autodiff_fusion")   # running Taichi kernels
SINGLE_THREAD = ("numpy_1t", "ndarray_1t", "autodiff_1t", "autodiff_fusion_1t", "torch_1t", "onnxruntime_1t")
_made: dict = {}

_NUMPY: Framework | None = None


def numpy_framework() -> Framework:
    global _NUMPY
    if _NUMPY is None:
        _NUMPY = Framework("numpy", "NumPy", "numpy", helpers={"np": np})
    return _NUMPY


def _burnbook(key: str, label: str, make_backend: Callable[[], tuple], families: tuple | None = None) -> Framework:
    """A burnbook backend, probed with a tiny add (and backward for autodiff)."""
    try:
        from burnbook import Tensor
        from burnbook.tensor import activation

        backend, device = make_backend()
        x = Tensor[backend, 1].from_data(np.ones(4, np.float32), device)
        if getattr(backend, "is_autodiff", False):
            x = x.require_grad()
            grads = (x * x).sum().backward()
            x.grad(grads).to_numpy()
        got = (x + x).to_numpy()
        if not np.allclose(got, 2.0):
            raise RuntimeError(f"probe x + x gave {got}")
        sync = getattr(backend, "sync", None) or _noop
        helpers = {"np": np, "Tensor": Tensor, "B": backend, "device": device, "relu": activation.relu}
        return Framework(key, label, "burnbook", backend=backend, device=device,
                         sync=sync, helpers=helpers, families=families)
    except Exception as exc:
        return Framework(key, label, "burnbook", available=False,
                         note=f"skipped: {short_error(exc, 240)}")


def _ndarray():
    from burnbook.backend import NdArray

    return NdArray, NdArray.default_device()


def _taichi_backend():
    from burnbook.backend import Taichi

    try:
        from burnbook.backend import TaichiDevice

        device = TaichiDevice.cpu()
    except (ImportError, AttributeError):
        device = Taichi.default_device()
    return Taichi, device


def _autodiff():
    from burnbook.backend import Autodiff, NdArray

    backend = Autodiff[NdArray]
    return backend, NdArray.default_device()


def _autodiff_taichi():
    from burnbook.backend import Autodiff

    inner, device = _taichi_backend()
    return Autodiff[inner], device


def _fusion():
    from burnbook.backend import Fusion

    inner, device = _taichi_backend()
    return Fusion[inner], device


def _autodiff_fusion():
    from burnbook.backend import Autodiff

    backend, device = _fusion()
    return Autodiff[backend], device


def _torch(threads: int) -> Framework:
    """PyTorch (CPU) with `threads` intra-op threads."""
    try:
        import torch

        helpers = {"torch": torch, "F": torch.nn.functional, "np": np}
        torch.set_num_threads(threads)
        note = f"torch.set_num_threads({threads}); get_num_threads() = {torch.get_num_threads()}"
        return Framework("torch", "PyTorch (CPU)", "torch", note=note, helpers=helpers,
                         threads=torch.get_num_threads())
    except Exception as exc:
        return Framework("torch", "PyTorch (CPU)", "torch", available=False,
                         note=f"skipped: {short_error(exc, 240)}")


def _onnxruntime(threads: int) -> Framework:
    """onnxruntime's CPU session (the zoo family's reference): NumPy arrays
    in and out; a case's setup makes the session, with `fw.threads` intra-op
    threads (1 for its `_1t` twin)."""
    try:
        import onnxruntime as ort

        return Framework("onnxruntime", f"onnxruntime {ort.__version__} (CPU)", "numpy", helpers={"np": np, "ort": ort},
                         note=f"intra_op_num_threads = {threads}", families=("zoo",), threads=threads)
    except Exception as exc:
        return Framework("onnxruntime", "onnxruntime (CPU)", "numpy", available=False, families=("zoo",),
                         note=f"skipped: {short_error(exc, 240)}")


def lanes_off(fw: Framework) -> Framework:
    """`fw` (Fusion[Taichi]) with its fused kernels' SIMD lanes off around
    each of its runs (`SETTINGS.lanes = 0`, outside the timer; restored
    after): the scalar `fused` kernel runs where `fused_lanes` would, so a
    case naming both measures what the lanes buy (chapter 24's claims)."""
    if not fw.available:
        return fw
    from burnbook.backend.taichi import SETTINGS

    saved: list = []

    def enter():
        saved.append(SETTINGS.lanes)
        SETTINGS.lanes = 0

    def leave():
        if saved:
            SETTINGS.lanes = saved.pop()

    fw.enter, fw.exit = enter, leave
    return fw


def single_thread(base: Framework) -> Framework:
    """`base` run on one thread: NumPy's OpenBLAS and PyTorch are set to one
    thread around each of its runs (outside the timer) and restored after.
    Only in the cases that name it (the MLP cases): on a busy 2-core machine a
    2-thread BLAS call can stall for whole scheduler ticks, and these rows
    show the same step without that. A Taichi backend's own kernels run
    serially on the calling thread too (`SETTINGS.serial_below` raised past
    any launch's size: every kernel takes its `serial` path), since Taichi's
    thread pool is fixed when it starts."""
    from . import machine

    one = "1 thread"
    label = base.label[:-1] + f", {one})" if base.label.endswith(")") else base.label + f" ({one})"
    fw = replace(base, key=base.key + "_1t", label=label, families=(), threads=1 if base.threads else None)
    if not base.available:
        return fw
    saved: list = []

    taichi = base.key in TAICHI_KEYS

    def enter():
        torch = sys.modules.get("torch")
        serial = _taichi_serial(None) if taichi else None
        saved.append((machine.blas_threads(), torch.get_num_threads() if torch else None, serial))
        machine.set_blas_threads(1)
        if torch:
            torch.set_num_threads(1)

    def leave():
        blas, tt, serial = saved.pop() if saved else (None, None, None)
        if blas:
            machine.set_blas_threads(blas)
        torch = sys.modules.get("torch")
        if torch and tt:
            torch.set_num_threads(tt)
        if serial is not None:
            _taichi_serial(serial)

    fw.enter, fw.exit = enter, leave
    fw.note = "NumPy's BLAS and PyTorch set to 1 thread around its runs; MLP, CNN and transformer cases only"
    if taichi:
        fw.note += " (and Taichi's kernels run serially on the calling thread)"
    if base.key == "onnxruntime":
        fw.note = "intra_op_num_threads = 1; zoo cases only"
    return fw


_SERIAL_ALWAYS = 1 << 62   # past any launch's element count


def _taichi_serial(value: int | None) -> int:
    """Set Taichi's `SETTINGS.serial_below` (None: every launch serial);
    returns the previous value."""
    from burnbook.backend.taichi import SETTINGS

    old = SETTINGS.serial_below
    SETTINGS.serial_below = _SERIAL_ALWAYS if value is None else value
    return old


def discover(keys: tuple | None = None, threads: int | None = None) -> list:
    """Every framework of `keys` (default: all), in report order, each probed."""
    threads = threads or os.cpu_count() or 1
    makers = {
        "numpy": numpy_framework,
        "ndarray": lambda: _burnbook("ndarray", "burnbook NdArray", _ndarray),
        "taichi": lambda: _burnbook("taichi", "burnbook Taichi (cpu)", _taichi_backend),
        "autodiff": lambda: _burnbook("autodiff", "burnbook Autodiff[NdArray]", _autodiff),
        "autodiff_taichi": lambda: _burnbook("autodiff_taichi", "burnbook Autodiff[Taichi] (cpu)", _autodiff_taichi,
                                             families=("dispatch", "autodiff")),
        # Issue 15: the lazy, fusing decorator over Taichi, in the cases that
        # name it (the fusion family's; the tracked ops, the MLP step and the
        # guide CNN step for the autodiff one).
        "fusion": lambda: _burnbook("fusion", "burnbook Fusion[Taichi] (cpu)", _fusion, families=("fusion",)),
        # The same with SIMD lanes off (the scalar fused kernel), in the cases that name it.
        "fusion_scalar": lambda: lanes_off(_burnbook("fusion_scalar", "burnbook Fusion[Taichi] (cpu, lanes off)",
                                                     _fusion, families=())),
        "autodiff_fusion": lambda: _burnbook("autodiff_fusion", "burnbook Autodiff[Fusion[Taichi]] (cpu)",
                                             _autodiff_fusion, families=("autodiff", "training")),
        "torch": lambda: _torch(threads),
        "onnxruntime": lambda: _onnxruntime(threads),
    }
    for key in SINGLE_THREAD:
        base = key[: -len("_1t")]
        makers[key] = (lambda b=base: single_thread(_made[b]))
    unknown = set(keys or ()) - set(makers)
    if unknown:
        raise ValueError(f"unknown framework(s) {sorted(unknown)}; choose from {list(ORDER)}")
    out = []
    _made.clear()
    for key in ORDER:
        if key in SINGLE_THREAD and (keys is None or key in keys) and key[:-3] not in _made:
            _made[key[:-3]] = makers[key[:-3]]()   # the base, even when not selected itself
        if keys is None or key in keys:
            fw = _made.get(key) or makers[key]()
            _made[key] = fw
            out.append(fw)
    # Taichi's arch: print what ran (the device of a live tensor).
    for fw in out:
        if fw.key in TAICHI_KEYS and fw.available:
            fw.note = taichi_note(fw)
        if fw.available and fw.families and fw.key not in SINGLE_THREAD:
            fw.note += f"; {' and '.join(fw.families)} families only"
    return out


def taichi_note(fw: Framework) -> str:
    parts = [f"device {fw.device!r}"]
    try:
        from burnbook.backend.taichi import launcher

        parts.extend(f"{k} {v}" for k, v in launcher.config().items())
    except Exception:  # noqa: BLE001 - the note is best effort; the runtime may not have started
        pass
    return ", ".join(parts)
