"""One model replica in a Ray worker process (`ray.remote` turns `Replica`
into an actor in `data_parallel`; this module itself never imports Ray at
import time, so the Learner works without the extra)."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import numpy as np

from burnbook.optim import GradientsAccumulator, GradientsParams
from ..step import detach_item
from .transport import dumps, loads

__all__ = ["Replica"]


class Replica:
    """Holds a model and its optimizer; each `step` computes the gradients
    of this worker's shard, all-reduces them with the other replicas and
    applies the same optimizer step as every other replica."""

    def __init__(self, rank: int, world_size: int, group: str, state: bytes, accumulation: int) -> None:
        self.rank, self.world_size, self.group = rank, world_size, group
        self.reset(state, accumulation)

    def reset(self, state: bytes, accumulation: int) -> int:
        """Take a new fit's model, optimizer and random state (a warm worker
        kept from the last fit)."""
        self.model, self.optim, rng_state = loads(state)
        backend = _backend_of(self.model)
        if rng_state is not None and backend is not None:
            backend.set_rng_state(rng_state)
        self.accumulation = accumulation
        self.accumulator, self.pending = GradientsAccumulator(), 0
        return self.rank

    def where(self) -> tuple[int, str, int]:
        """(pid, host name, rank): what an error names when this worker dies."""
        return os.getpid(), socket.gethostname(), self.rank

    def join(self) -> int:
        """Join the collective group (every replica calls it at once: Gloo's
        rendezvous waits for all of them)."""
        import torch  # noqa: F401  Ray's Gloo backend registers itself only once torch is imported
        import ray.util.collective as col

        col.init_collective_group(self.world_size, self.rank, backend="gloo", group_name=self.group)
        return self.rank

    def step(self, shard: bytes, lr: float, weight: float) -> tuple[bytes, float, float]:
        """Train on one shard: gradients scaled by `weight` (the shard's share
        of the global batch), summed over the replicas by the all-reduce,
        then the optimizer step. Returns the detached item, the seconds spent
        and the seconds of those waiting in the all-reduce."""
        import ray.util.collective as col

        started = time.perf_counter()
        batch = loads(shard)
        out = self.model.train_step(batch)
        grads = out.grads if isinstance(out.grads, GradientsParams) else GradientsParams.from_grads(out.grads,
                                                                                                   self.model)
        ids = sorted(grads.ids(), key=lambda pid: pid.value)
        tensors = [grads.get(pid) for pid in ids]
        arrays = [t.to_numpy() for t in tensors]
        flat = np.concatenate([a.ravel() for a in arrays]).astype(np.float32) * np.float32(weight)
        reduce_started = time.perf_counter()
        col.allreduce(flat, group_name=self.group)  # in place: the sum over every replica
        reduced = time.perf_counter() - reduce_started
        summed, offset = GradientsParams(), 0
        for pid, tensor, array in zip(ids, tensors, arrays):
            part = flat[offset:offset + array.size].reshape(array.shape).astype(array.dtype, copy=False)
            summed.register(pid, type(tensor).from_data(part))
            offset += array.size
        if self.accumulation > 1:
            self.accumulator.accumulate(self.model, summed)
            self.pending += 1
            if self.pending >= self.accumulation:
                self.model, self.pending = self._optimize(lr, self.accumulator.grads()), 0
        else:
            self.model = self._optimize(lr, summed)
        item = dumps(detach_item(out.item))
        return item, time.perf_counter() - started, reduced

    def _optimize(self, lr: float, grads: GradientsParams) -> Any:
        optimize = getattr(self.model, "optimize", None)
        if callable(optimize):
            return optimize(self.optim, lr, grads)
        return self.optim.step(lr, self.model, grads)

    def state(self) -> bytes:
        """The replica's model and optimizer (rank 0's are checkpointed)."""
        return dumps((self.model, self.optim))

    def die(self) -> None:
        """End this worker process at once, as a crash would (for tests and
        the chapter's failure demonstration)."""
        os._exit(1)


def _backend_of(model: Any) -> Any:
    for _, param in model.named_params():
        return param.val()._B
    return None
