"""Pickling burnbook objects for another process: tensors, tensor types,
decorated backends and `Param`s, which the standard pickler cannot name.

Tensor classes (`Tensor[NdArray, 2]`) and decorated backends
(`Autodiff[NdArray]`, `Fusion[Taichi]`) are built at run time, so pickle
cannot find them by name. `reduce` sends a tensor as its backend, rank,
kind, values (a NumPy array), device and whether it is tracked; a tensor
type as (backend, rank, kind); a decorated backend as (decorator, inner
backend); a `Param` as its class, tensor, id and flag (its attribute
fall-through defeats pickle's default for slotted objects). The receiving
side rebuilds them through the same `Tensor[B, D, K]` and `Autodiff[B]`
caches, so it gets its own classes, identical by construction.

Two senders use it: the data loader's worker processes (`dumps`, plain
pickle) and the data-parallel trainer, which adds `reduce` to Ray's
cloudpickle and leaves devices out (`keep_device=False`: each worker
rebuilds on its default device).

A Taichi tensor would need the receiving process to start its own Taichi
runtime; use thread workers (or build NumPy batches) with Taichi.
"""

from __future__ import annotations

import io
import pickle
import sys
from typing import Any

import numpy as np

from burnbook.backend.decorator import Decorator
from burnbook.tensor import Tensor
from burnbook.tensor.core import TensorBase

__all__ = ["TensorPickler", "dumps", "loads", "reduce"]


def _loaded(module: str, name: str) -> type | None:
    """`module.name` when that module is already imported, else None. No
    object of a class exists before its module runs, so checking against a
    class never has to import it."""
    found = sys.modules.get(module)
    return getattr(found, name, None) if found is not None else None


def _tensor(backend: type, rank: int, kind: type, values: np.ndarray, device: Any, tracked: bool) -> Any:
    tensor = Tensor[backend, rank, kind].from_data(values, device)
    return tensor.require_grad() if tracked else tensor


def _tensor_type(backend: type, rank: int, kind: type) -> type:
    return Tensor[backend, rank, kind]


def _decorated(decorator: type, inner: type) -> type:
    return decorator[inner]


def _param(cls: type, tensor: Any, pid: Any, require_grad: bool) -> Any:
    return cls(tensor, pid, require_grad)


def reduce(obj: Any, keep_device: bool = True) -> Any:
    """How `obj` travels, as `reducer_override` returns it: (rebuild function,
    arguments), or NotImplemented for pickle's own way."""
    if isinstance(obj, TensorBase) and obj._B is not None:
        tracked = bool(obj._B.is_autodiff and obj.is_require_grad())
        device = obj.device() if keep_device else None
        return _tensor, (obj._B, obj._D, obj._K, obj.to_numpy(), device, tracked)
    if isinstance(obj, type):
        if issubclass(obj, TensorBase) and obj._B is not None:
            return _tensor_type, (obj._B, obj._D, obj._K)
        if issubclass(obj, Decorator) and obj._inner is not None:
            # Autodiff[B] or Fusion[B]: the generic decorator and the backend it wraps
            # (not InnerBackend, which is Fusion[B] itself for Fusion, as in Burn)
            return _decorated, (obj._generic, obj._inner)
        return NotImplemented
    param = _loaded("burnbook.module.param", "Param")
    if param is not None and isinstance(obj, param):
        return _param, (type(obj), obj.val(), obj.id, obj.is_require_grad())
    return NotImplemented


class TensorPickler(pickle.Pickler):
    """Pickle, plus burnbook's tensors, tensor types, backends and `Param`s."""

    def reducer_override(self, obj: Any) -> Any:
        return reduce(obj)


def dumps(obj: Any) -> bytes:
    """Pickle `obj`, tensors included."""
    buffer = io.BytesIO()
    TensorPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    return pickle.loads(data)
