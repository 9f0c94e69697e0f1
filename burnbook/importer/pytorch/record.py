"""`PyTorchRecord`: the tensors of a PyTorch file before they meet a module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Iterator

import numpy as np

from burnbook.module import Module
from burnbook.record import Record
from burnbook.record.precision import PrecisionSettings
from burnbook.tensor import TensorData
from ._dtypes import describe
from .adapter import adapt

__all__ = ["PyTorchRecord"]


class PyTorchRecord(Mapping):
    """A read-only mapping from (remapped) key to `TensorData`, as the file
    holds them: PyTorch's names and layouts, the file's element types.

    It becomes a module's record with `adapt_to(module)`, which renames,
    transposes, converts and checks (see `adapter`):
    `model.load_record(record.adapt_to(model))`. Burn infers the target
    record type from the code; Python needs the module to be named.
    """

    __slots__ = ("_tensors", "source", "precision", "debug")

    def __init__(self, tensors: Mapping[str, np.ndarray], source: str,
                 precision: type[PrecisionSettings], debug: bool = False) -> None:
        self._tensors = dict(tensors)
        self.source, self.precision, self.debug = source, precision, debug

    def __getitem__(self, key: str) -> TensorData:
        try:
            return TensorData.from_numpy(self._tensors[key])
        except KeyError:
            raise KeyError(f"{self.source} has no tensor {key!r} (its keys: {', '.join(self._tensors) or 'none'})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def shapes(self) -> dict[str, list[int]]:
        """`{key: shape}` of every tensor, in file order."""
        return {k: list(v.shape) for k, v in self._tensors.items()}

    def adapt_to(self, module: Module) -> Record:
        """The record `module.load_record` takes: only the keys the module
        has (keys of sub-modules it does not define are skipped), in its
        names, layouts and the recorder's precision. Raises `RecordError`
        naming every missing, unexpected or mis-shaped key and the file."""
        adapted = adapt(self._tensors, module, self.precision, self.source)
        if self.debug and adapted.skipped:
            print(f"Skipped {len(adapted.skipped)} key(s) of {self.source} that {type(module).__name__} "
                  f"does not define: {', '.join(adapted.skipped)}")
        return adapted.record

    def __repr__(self) -> str:
        lines = [f"  {k}: {describe(v)}," for k, v in self._tensors.items()]
        return f"PyTorchRecord({self.source}) {{\n" + "\n".join(lines) + "\n}" if lines else \
            f"PyTorchRecord({self.source}) {{}}"
