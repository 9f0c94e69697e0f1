"""`Cpu`, the one device of `NdArray`."""

from __future__ import annotations


class Cpu:
    """The one device of `NdArray`: the host CPU."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Cpu"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cpu)

    def __hash__(self) -> int:
        return hash("Cpu")


CPU = Cpu()   # every primitive's device: ops return this one instance
