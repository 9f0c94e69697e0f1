"""Moving a model, an optimizer and batches between Ray processes, and
cutting a global batch into one shard per worker.

Objects travel as cloudpickle bytes (it also carries classes and functions
defined in a notebook or script by value), with burnbook's one tensor
pickler (`burnbook/data/tensor_pickle.py`) for what the standard pickler
cannot name: tensors, tensor types, decorated backends (`Autodiff[NdArray]`)
and `Param`s. Tensors are rebuilt on the receiving worker's default device.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
from typing import Any

import numpy as np

from burnbook.data import tensor_pickle

__all__ = ["dumps", "loads", "batch_size_of", "split_batch", "shard_sizes", "merge_items", "UnevenBatchError"]


class UnevenBatchError(ValueError):
    """A global batch has fewer items than there are workers, or its tensors
    disagree on the batch size, so it cannot be shared out."""


def _pickler_base() -> type:
    """Ray's cloudpickle, which also carries classes and functions defined
    in a notebook or script (`__main__`) by value; plain pickle without Ray."""
    try:
        from ray import cloudpickle
    except ImportError:
        return pickle.Pickler
    return cloudpickle.Pickler


class _Pickler(_pickler_base()):  # type: ignore[misc]
    def reducer_override(self, obj: Any) -> Any:
        reduced = tensor_pickle.reduce(obj, keep_device=False)
        if reduced is not NotImplemented:
            return reduced
        parent = getattr(super(), "reducer_override", None)
        return parent(obj) if parent is not None else NotImplemented


def dumps(obj: Any) -> bytes:
    """`obj` (a model, an optimizer, a batch, a step's item) as bytes."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    return pickle.loads(data)


# -- sharding a batch ---------------------------------------------------------------------
def _is_tensor(value: Any) -> bool:
    from burnbook.tensor.core import TensorBase

    return isinstance(value, TensorBase) or isinstance(value, np.ndarray)


def _leaves(batch: Any) -> list[tuple[str, Any]]:
    """(where, array-like) for every tensor or NumPy array in `batch`."""
    found: list[tuple[str, Any]] = []

    def walk(value: Any, where: str) -> None:
        if _is_tensor(value):
            found.append((where, value))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name), f"{where}.{f.name}")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{where}[{key!r}]")
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")

    walk(batch, "batch")
    return found


def _rows(value: Any) -> int:
    return int(value.shape[0]) if isinstance(value, np.ndarray) else int(value.dims()[0])


def batch_size_of(batch: Any) -> int:
    """The number of items in `batch`: the first dimension its tensors share."""
    leaves = _leaves(batch)
    if not leaves:
        raise UnevenBatchError(f"DataParallel: found no tensor in the batch ({type(batch).__name__}), so it cannot "
                               "be split across workers; a batch is a tensor, or a dataclass, tuple, list or "
                               "dict of tensors whose first dimension is the batch")
    sizes = {where: _rows(v) for where, v in leaves}
    if len(set(sizes.values())) != 1:
        listed = ", ".join(f"{w}: {n}" for w, n in sizes.items())
        raise UnevenBatchError(f"DataParallel: the batch's tensors disagree on the batch size (first dimension: "
                               f"{listed}), so it cannot be split across workers")
    return next(iter(sizes.values()))


def shard_sizes(batch_size: int, num_workers: int) -> list[int]:
    """How many items each worker gets: as equal as possible, the first
    `batch_size % num_workers` workers one more."""
    if batch_size < num_workers:
        raise UnevenBatchError(f"DataParallel: a batch of {batch_size} item(s) cannot feed {num_workers} workers "
                               f"(each needs at least one); use batches of at least {num_workers} items, or "
                               "drop the short last batch")
    base, extra = divmod(batch_size, num_workers)
    return [base + (1 if rank < extra else 0) for rank in range(num_workers)]


def _slice(value: Any, start: int, stop: int) -> Any:
    if isinstance(value, np.ndarray):
        return value[start:stop]
    return value.narrow(0, start, stop - start)


def split_batch(batch: Any, sizes: list[int]) -> list[Any]:
    """`batch` cut along its first dimension into consecutive shards of
    `sizes` items; everything that is not a tensor is shared as it is."""
    bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()

    def cut(value: Any, start: int, stop: int) -> Any:
        if _is_tensor(value):
            return _slice(value, start, stop)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return dataclasses.replace(value, **{f.name: cut(getattr(value, f.name), start, stop)
                                                 for f in dataclasses.fields(value) if f.init})
        if isinstance(value, dict):
            return {k: cut(v, start, stop) for k, v in value.items()}
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*(cut(v, start, stop) for v in value))
        if isinstance(value, (list, tuple)):
            return type(value)(cut(v, start, stop) for v in value)
        return value

    return [cut(batch, bounds[i], bounds[i + 1]) for i in range(len(sizes))]


def merge_items(items: list[Any], sizes: list[int]) -> Any:
    """The metrics' view of one global batch from the workers' items.

    `ClassificationOutput` and `RegressionOutput` are joined back: outputs
    and targets concatenated in rank order, the loss the size-weighted mean
    of the shards' losses (the global batch's loss for a loss that averages
    over the batch, as the book's losses do). Any other item is rank 0's.
    """
    from burnbook.tensor import Tensor
    from ..step import _Output

    first = items[0]
    if len(items) == 1 or not isinstance(first, _Output) or any(type(i) is not type(first) for i in items):
        return first
    total = float(sum(sizes))
    loss = items[0].loss * (sizes[0] / total)
    for item, size in zip(items[1:], sizes[1:]):
        loss = loss + item.loss * (size / total)
    output = Tensor.cat([i.output for i in items], 0)
    targets = Tensor.cat([i.targets for i in items], 0)
    return type(first)(loss, output, targets)
