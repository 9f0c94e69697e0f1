"""The Learner: builder, training loop, summary (Burn's `burn_train::learner`)."""

from .base import Learner, TrainingInterrupter
from .builder import LearnerBuilder
from .epoch import iterate_epoch
from .summary import LearnerSummary, MetricSummary

__all__ = ["Learner", "LearnerBuilder", "TrainingInterrupter", "LearnerSummary", "MetricSummary", "iterate_epoch"]
