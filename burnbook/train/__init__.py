"""Training: the Learner, metrics, checkpoints, loggers and renderers
(Burn's `burn-train` crate).

    from burnbook.train import LearnerBuilder, ClassificationOutput, TrainOutput
    from burnbook.train.metric import AccuracyMetric, LossMetric

    class Model(Module):
        ...
        def train_step(self, batch) -> TrainOutput:
            item = self.forward_classification(batch.images, batch.targets)
            return TrainOutput(self, item.loss.backward(), item)

        def valid_step(self, batch) -> ClassificationOutput:
            return self.forward_classification(batch.images, batch.targets)

    learner = (LearnerBuilder("artifacts")
               .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .num_epochs(3)
               .build(model, AdamConfig().init(), 1e-3))
    model = learner.fit(dataloader_train, dataloader_valid)

The artifact folder, as in the book's Learner section::

    artifacts/experiment.log
    artifacts/checkpoint/model-3.mpk.gz   optim-3.mpk.gz   scheduler-3.mpk.gz  (last 2 epochs + best)
    artifacts/checkpoint/rng-3.mpk.gz     (burnbook's addition: the backend's random state)
    artifacts/train/epoch-1/Accuracy.log  Loss.log          (one value per iteration)
    artifacts/valid/epoch-1/Accuracy.log  Loss.log

Nothing here imports a notebook package; inside a Jupyter kernel the
Learner loads `burnbook.widgets` lazily for its dashboard.
"""

from . import metric
from .checkpoint import (
    CheckpointingStrategy, ComposedCheckpointingStrategy, Delete, FileCheckpointer, KeepLastNCheckpoints,
    MetricCheckpointingStrategy, Save,
)
from .early_stopping import EarlyStoppingStrategy, MetricEarlyStoppingStrategy, NoImprovementSince, StoppingCondition
from .learner import Learner, LearnerBuilder, LearnerSummary, TrainingInterrupter
from .logger import FileMetricLogger, InMemoryMetricLogger, MetricLogError, MetricLogger
from .metric import (
    AccuracyInput, AccuracyMetric, Adaptor, CpuMemory, CpuTemperature, CpuUse, CudaMetric, GpuTemperature,
    LearningRateMetric, LossInput, LossMetric, Metric, MetricEntry, MetricMetadata, Numeric, adaptor,
)
from .renderer import (
    CliMetricsRenderer, MetricsRenderer, MetricsRendererBase, MetricState, NotebookTextRenderer, TrainingProgress,
)
from .step import ClassificationOutput, RegressionOutput, TrainOutput, TrainStep, ValidStep
from .store import Aggregate, Direction, EventStore, Split

__all__ = [
    # the learner
    "LearnerBuilder", "Learner", "TrainingInterrupter", "LearnerSummary",
    # steps and outputs
    "TrainOutput", "TrainStep", "ValidStep", "ClassificationOutput", "RegressionOutput",
    # metrics
    "metric", "Metric", "Numeric", "MetricEntry", "MetricMetadata", "Adaptor", "adaptor",
    "AccuracyMetric", "AccuracyInput", "LossMetric", "LossInput", "LearningRateMetric",
    "CpuUse", "CpuMemory", "CpuTemperature", "CudaMetric", "GpuTemperature",
    # store, loggers, checkpoints, early stopping
    "Aggregate", "Direction", "Split", "EventStore", "MetricLogger", "FileMetricLogger", "InMemoryMetricLogger",
    "MetricLogError",
    "FileCheckpointer", "CheckpointingStrategy", "KeepLastNCheckpoints", "MetricCheckpointingStrategy",
    "ComposedCheckpointingStrategy", "Save", "Delete",
    "EarlyStoppingStrategy", "MetricEarlyStoppingStrategy", "StoppingCondition", "NoImprovementSince",
    # renderers
    "MetricsRenderer", "MetricsRendererBase", "MetricState", "TrainingProgress", "CliMetricsRenderer",
    "NotebookTextRenderer",
]
