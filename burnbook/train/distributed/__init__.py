"""Data-parallel training on Ray (burnbook's `[distributed]` extra).

    from burnbook.train.distributed import DataParallel

    learner = (LearnerBuilder("artifacts")
               .metric_train_numeric(LossMetric())
               .distributed(DataParallel(2))          # two replicas, two Ray worker processes
               .build(model, SgdConfig().init(), 0.1))
    model = learner.fit(loader_train, loader_valid)

Each global batch is split across the workers, their gradients are averaged
by Gloo's all-reduce (`ray.util.collective`), and every replica takes the
same optimizer step; see `data_parallel` for the details. The worker
processes outlive `fit`, idle, so the next fit with the same settings
starts at once; `shutdown_workers()` or `ray.shutdown()` ends them. Importing this
package needs no Ray; creating a `DataParallel` does.
"""

from .data_parallel import DataParallel, DistributedWorkerError, WorkerThroughputMetric, shutdown_workers, start_local
from .transport import UnevenBatchError

__all__ = ["DataParallel", "DistributedWorkerError", "UnevenBatchError", "WorkerThroughputMetric", "shutdown_workers",
           "start_local"]
