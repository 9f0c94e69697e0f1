"""Metrics for the Learner (Burn's `burn_train::metric`).

| metric | `NAME` (log file) | input | numeric |
| --- | --- | --- | --- |
| `AccuracyMetric(pad_token=None)` | Accuracy | `AccuracyInput` | yes, % |
| `LossMetric()` | Loss | `LossInput` | yes |
| `LearningRateMetric()` | Learning Rate (`Learning_Rate.log`) | none | yes |
| `CpuUse()` | CPU Usage | none | yes, % |
| `CpuMemory()` | CPU Memory | none | yes, GB |
| `CpuTemperature()` | CPU Temperature | none | yes, °C |
| `GpuTemperature()` | GPU Temperature | none | yes, °C |
| `CudaMetric()` | CUDA Stats | none | no (text) |

Machine metrics say "not available" where the machine cannot tell. Custom
metrics follow the `Metric` (and `Numeric`) protocols of `base`.
"""

from .acc import AccuracyInput, AccuracyMetric, LossInput, LossMetric
from .adaptor import RAW, AdaptError, Adaptor, adapt, adaptor, register_adaptor
from .base import (
    NOT_AVAILABLE, Metric, MetricEntry, MetricMetadata, Numeric, NumericEntry, Progress, format_float,
    is_numeric, metric_name,
)
from .cuda import CudaMetric, GpuReading, GpuTemperature, read_gpus
from .learning_rate import LearningRateMetric
from .state import FormatOptions, NumericMetricState
from .system import CpuMemory, CpuTemperature, CpuUse

__all__ = [
    "Metric", "Numeric", "MetricEntry", "MetricMetadata", "Progress", "NumericEntry", "format_float",
    "metric_name", "is_numeric", "NOT_AVAILABLE",
    "Adaptor", "adaptor", "register_adaptor", "adapt", "AdaptError", "RAW",
    "NumericMetricState", "FormatOptions",
    "AccuracyInput", "AccuracyMetric", "LossInput", "LossMetric", "LearningRateMetric",
    "CpuUse", "CpuMemory", "CpuTemperature", "CudaMetric", "GpuTemperature", "GpuReading", "read_gpus",
]
