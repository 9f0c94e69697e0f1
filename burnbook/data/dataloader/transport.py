"""Moving batches from worker processes to the loader: pickle, plus tensors.

burnbook tensors are not picklable (their classes, `Tensor[NdArray, 2]`,
are built on demand), so this pickler sends a tensor as its backend, rank,
kind, device and values (a NumPy array), and the receiving side rebuilds it
with `Tensor[B, D, K].from_data(values, device)`. Backend classes made by
`Autodiff[B]` travel as "Autodiff of B". Everything else is plain pickle.

A Taichi tensor would need the worker process to start its own Taichi
runtime; use thread workers (or build NumPy batches) with Taichi.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import numpy as np


_BASE: list = []


def _tensor_base() -> type:
    if not _BASE:
        from burnbook.tensor.core import TensorBase

        _BASE.append(TensorBase)
    return _BASE[0]


def _autodiff_of(inner: type) -> type:
    from burnbook.autodiff import Autodiff

    return Autodiff[inner]


def _tensor_type(backend: type, rank: int, kind: type) -> type:
    from burnbook.tensor import Tensor

    return Tensor[backend, rank, kind]


def _rebuild_tensor(backend: type, rank: int, kind: type, values: np.ndarray, device: Any, grad: bool) -> Any:
    from burnbook.tensor import Tensor

    tensor = Tensor[backend, rank, kind].from_data(values, device)
    return tensor.require_grad() if grad else tensor


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        base = _tensor_base()
        if isinstance(obj, base):
            grad = bool(obj.is_require_grad()) if hasattr(obj, "is_require_grad") else False
            return _rebuild_tensor, (obj._B, obj._D, obj._K, obj.to_numpy(), obj.device(), grad)
        if isinstance(obj, type):
            if issubclass(obj, base) and obj._B is not None:
                return _tensor_type, (obj._B, obj._D, obj._K)
            if getattr(obj, "is_autodiff", False) and getattr(obj, "InnerBackend", None) is not None:
                return _autodiff_of, (obj.InnerBackend,)
        return NotImplemented


def dumps(obj: Any) -> bytes:
    """Pickle `obj`, tensors included."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    return pickle.loads(data)
