"""`TaichiDevice`: where Taichi runs (Burn's `WgpuDevice`)."""

from __future__ import annotations

import glob
import os
import platform
import sys

KINDS = {"cpu": "cpu", "x64": "cpu", "arm64": "cpu", "cuda": "cuda", "vulkan": "vulkan", "metal": "metal"}
"""Taichi's arch names (and burnbook's) -> the device kind."""


class DeviceDtypeError(TypeError):
    """A tensor of a dtype that the running Taichi device cannot hold (f64 on Metal)."""


def host_arch() -> str:
    m = platform.machine().lower()
    return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(m, m)


def gpu_render_node() -> bool:
    """Whether a GPU could back a Vulkan device here (always true off Linux)."""
    return not sys.platform.startswith("linux") or bool(glob.glob("/dev/dri/renderD*"))


class TaichiDevice:
    """Where Taichi runs: `cpu()`, `cuda(i)`, `vulkan()`, `metal()` or `best_available()`."""

    __slots__ = ("kind", "index")

    def __init__(self, kind: str = "cpu", index: int = 0) -> None:
        if kind not in ("cpu", "cuda", "vulkan", "metal"):
            raise ValueError(f"TaichiDevice: unknown kind {kind!r} (cpu, cuda, vulkan, metal)")
        self.kind, self.index = kind, int(index) if kind == "cuda" else 0

    @classmethod
    def cpu(cls) -> "TaichiDevice":
        return cls("cpu")

    @classmethod
    def cuda(cls, i: int = 0) -> "TaichiDevice":
        """CUDA device `i`. Taichi binds one CUDA device per process: for i > 0
        burnbook narrows CUDA_VISIBLE_DEVICES to it before starting the runtime."""
        return cls("cuda", i)

    @classmethod
    def vulkan(cls) -> "TaichiDevice":
        return cls("vulkan")

    @classmethod
    def metal(cls) -> "TaichiDevice":
        return cls("metal")

    @classmethod
    def best_available(cls) -> "TaichiDevice":
        """The device the runtime runs on, starting it if needed on the first of
        CUDA, Metal, Vulkan that really initialises, else the CPU. Starting is
        the only reliable probe, so this call starts Taichi's runtime.

        On Linux, Vulkan is tried only where a GPU render node exists
        (`/dev/dri/renderD*`): without one the only Vulkan driver is a software
        one (Mesa's lavapipe), slower than Taichi's own CPU backend. Ask for it
        with `TaichiDevice.vulkan()` or `BURNBOOK_TAICHI_ARCH=vulkan`."""
        from .runtime import start_best

        return start_best().device

    @classmethod
    def from_env(cls) -> "TaichiDevice":
        """The device `BURNBOOK_TAICHI_ARCH` names: cpu (the default), cuda[:i],
        vulkan, metal, or best (`best_available()`)."""
        spec = os.environ.get("BURNBOOK_TAICHI_ARCH", "cpu").strip().lower()
        if spec in ("best", "gpu", "auto"):
            return cls.best_available()
        kind, _, index = spec.partition(":")
        if kind not in KINDS or (index and not index.isdigit()):
            raise ValueError(f"BURNBOOK_TAICHI_ARCH={spec!r}: expected cpu, cuda[:i], vulkan, metal or best")
        return cls(KINDS[kind], int(index or 0))

    def __repr__(self) -> str:
        if self.kind == "cpu":
            return f"Cpu({host_arch()})"
        return f"Cuda({self.index})" if self.kind == "cuda" else self.kind.capitalize()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaichiDevice) and (self.kind, self.index) == (other.kind, other.index)

    def __hash__(self) -> int:
        return hash(("taichi", self.kind, self.index))
