"""Metrics one by one: values, formatting, the adaptor mechanism, custom
metrics through the protocols, and the machine metrics' "not available"
paths (no psutil, no sensor, no GPU), which must never raise."""

from __future__ import annotations

import math
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from burnbook import Int, Tensor
from burnbook.backend import NdArray
from burnbook.optim import SgdConfig
from burnbook.train import (
    AccuracyInput, AccuracyMetric, ClassificationOutput, CpuMemory, CpuTemperature, CpuUse, CudaMetric,
    GpuTemperature, LearnerBuilder, LearningRateMetric, LossInput, LossMetric, Metric, MetricEntry,
    MetricMetadata, MetricsRendererBase, Numeric, RegressionOutput, adaptor,
)
from burnbook.train.metric import AdaptError, FormatOptions, NumericMetricState, adapt, cuda, format_float, system
from burnbook.train.step import detach_item

from .helpers import B, ShuffledLoader, batches, make_data, make_model

META = MetricMetadata.fake()


def acc_input(scores, targets) -> AccuracyInput:
    return AccuracyInput(Tensor[NdArray, 2].from_data(np.array(scores, np.float32)),
                         Tensor[NdArray, 1, Int].from_data(np.array(targets)))


def test_accuracy_with_and_without_pad_token():
    metric = AccuracyMetric()
    entry = metric.update(acc_input([[0, 1], [1, 0], [0, 1], [1, 0]], [1, 0, 0, 0]), META)
    assert metric.value() == 75.0 and entry.serialize == "75.0"
    assert entry.formatted == "epoch 75.00 % - batch 75.00 %"
    metric.update(acc_input([[0, 1], [0, 1]], [0, 0]), META)
    assert metric.value() == 0.0 and metric.state.running() == pytest.approx(50.0)  # 3 of 6
    metric.clear()
    assert math.isnan(metric.value())
    padded = AccuracyMetric().with_pad_token(2)
    padded.update(acc_input([[0, 1, 0], [1, 0, 0], [0, 0, 1]], [1, 1, 2]), META)
    assert padded.value() == 50.0  # the pad row is not counted
    entry = padded.update(acc_input([[1, 0, 0]], [2]), META)
    assert math.isnan(padded.value()) and entry.serialize == "NaN"
    assert padded.state.running() == 50.0
    with pytest.raises(ValueError, match=r"\[batch, classes\]"):
        AccuracyMetric().update(AccuracyInput(np.zeros(2), np.zeros(2)), META)


def test_loss_and_learning_rate_metrics():
    loss = LossMetric()
    entry = loss.update(LossInput(Tensor[NdArray, 1].from_floats([0.5])), META)
    assert loss.value() == 0.5 and entry.formatted == "epoch 0.50 - batch 0.50" and entry.name == "Loss"
    loss.update(LossInput(Tensor[NdArray, 1].from_floats([1.0, 2.0])), META)  # unreduced: mean, weight 2
    assert loss.value() == 1.5 and loss.state.running() == pytest.approx((0.5 + 3.0) / 3)
    lr = LearningRateMetric()
    entry = lr.update(None, MetricMetadata(lr=1e-4))
    assert lr.value() == 1e-4 and entry.formatted == "epoch 1.00e-4 - batch 1.00e-4" and entry.name == "Learning Rate"
    entry = lr.update(None, MetricMetadata(lr=None))
    assert not entry.available and math.isnan(lr.value())


def test_format_float_follows_burn():
    assert format_float(0.123456, 2) == "0.12"
    assert format_float(0.001, 2) == "1.00e-3"
    assert format_float(12.5, 3) == "12.500"
    assert format_float(float("nan"), 2) == "NaN"
    state = NumericMetricState()
    assert state.update(2.0, 3, FormatOptions("X").unit("u")).formatted == "epoch 2.0 u - batch 2.0 u"


def test_outputs_adapt_to_metric_inputs_and_detach():
    loss = Tensor[B, 1].from_floats([0.3]).require_grad()
    scores = Tensor[B, 2].from_floats([[1.0, 2.0]]).require_grad()
    targets = Tensor[B, 1, Int].from_ints([1])
    out = ClassificationOutput(loss * 2.0, scores * 1.0, targets)
    assert isinstance(adapt(out, AccuracyInput), AccuracyInput)
    assert adapt(out, LossInput).tensor is out.loss
    assert adapt(out, None) is None
    detached = detach_item(out)
    assert isinstance(detached, ClassificationOutput)
    assert not detached.loss._B.is_autodiff and not detached.output._B.is_autodiff
    regression = RegressionOutput(loss, scores, scores)
    assert isinstance(adapt(regression, LossInput), LossInput)
    with pytest.raises(AdaptError, match="RegressionOutput that cannot be adapted to it.*@adaptor"):
        adapt(regression, AccuracyInput, metric="the train metric Accuracy")
    assert detach_item({"x": loss * 1.0})["x"]._B is NdArray


class Hits:
    """An output of my own."""

    def __init__(self, logits, labels) -> None:
        self.logits, self.labels = logits, labels


@adaptor(Hits, AccuracyInput)
def _hits_to_accuracy(out: Hits) -> AccuracyInput:
    return AccuracyInput(out.logits, out.labels)


class ErrorRate(Metric):
    """A custom metric written against the protocol, as in the book's Metric chapter."""

    NAME = "Error Rate"
    input_type = AccuracyInput

    def __init__(self) -> None:
        self.wrong = self.total = 0

    def update(self, item: AccuracyInput, metadata: MetricMetadata) -> MetricEntry:
        predicted = np.asarray(item.outputs).argmax(1)
        self.wrong += int((predicted != np.asarray(item.targets)).sum())
        self.total += len(predicted)
        return MetricEntry(self.name(), f"{self.value():.2f} %", repr(self.value()))

    def clear(self) -> None:
        self.wrong = self.total = 0

    def value(self) -> float:
        return 100.0 * self.wrong / self.total


def test_adaptor_registry_and_custom_metric_protocols():
    hits = Hits(acc_input([[0, 1]], [1]).outputs, acc_input([[0, 1]], [1]).targets)
    assert isinstance(adapt(hits, AccuracyInput), AccuracyInput)
    metric = ErrorRate()
    assert isinstance(metric, Metric) and isinstance(metric, Numeric) and metric.name() == "Error Rate"
    metric.update(adapt(hits, AccuracyInput), META)
    assert metric.value() == 0.0


def test_a_custom_metric_runs_in_the_learner(tmp_path):
    x, y = make_data(64, 3)
    learner = (LearnerBuilder(tmp_path).renderer(MetricsRendererBase()).num_epochs(1)
               .metric_valid_numeric(ErrorRate()).metric_valid_numeric(AccuracyMetric())
               .build(make_model(), SgdConfig().init(), 0.1))
    learner.fit(ShuffledLoader(x, y, 16, 1), batches(x, y, 16, NdArray))
    errors = [float(v) for v in (tmp_path / "valid/epoch-1/Error_Rate.log").read_text().split()]
    accuracy = [float(v) for v in (tmp_path / "valid/epoch-1/Accuracy.log").read_text().split()]
    assert len(errors) == 4
    assert errors[0] == pytest.approx(100.0 - accuracy[0])


# -- machine metrics ---------------------------------------------------------------------


def test_cpu_metrics_read_psutil_when_present():
    pytest.importorskip("psutil")
    for metric in (CpuUse(), CpuMemory()):
        entry = metric.update(None, META)
        assert entry.available and math.isfinite(metric.value()) and float(entry.serialize) >= 0
    assert "RAM Used" in CpuMemory().update(None, META).formatted


@pytest.mark.parametrize("cls", [CpuUse, CpuMemory, CpuTemperature])
def test_cpu_metrics_without_psutil_are_not_available(monkeypatch, cls):
    monkeypatch.setattr(system, "_load_psutil", lambda: None)
    metric = cls()
    entry = metric.update(None, META)
    assert not entry.available and "not available" in entry.formatted and "psutil" in entry.formatted
    assert entry.serialize == "NaN" and math.isnan(metric.value())


def fake_psutil(**sensors):
    return SimpleNamespace(cpu_percent=lambda interval=None: 12.5, **sensors)


@pytest.mark.parametrize("psutil", [
    fake_psutil(),                                                      # no sensors API (macOS, Windows)
    fake_psutil(sensors_temperatures=lambda: {}),                       # a container
    fake_psutil(sensors_temperatures=lambda: {"nvme": [SimpleNamespace(label="", current=40.0)]}),
    fake_psutil(sensors_temperatures=lambda: 1 / 0),                    # a broken driver
])
def test_cpu_temperature_without_a_sensor_is_not_available(monkeypatch, psutil):
    monkeypatch.setattr(system, "_load_psutil", lambda: psutil)
    metric = CpuTemperature()
    entry = metric.update(None, META)
    assert not entry.available and entry.formatted == "CPU Temperature: not available"
    assert math.isnan(metric.value())


def test_cpu_temperature_reads_the_package_sensor(monkeypatch):
    readings = {"acpitz": [SimpleNamespace(label="", current=30.0)],
                "coretemp": [SimpleNamespace(label="Core 0", current=50.0),
                             SimpleNamespace(label="Package id 0", current=55.0)]}
    monkeypatch.setattr(system, "_load_psutil", lambda: fake_psutil(sensors_temperatures=lambda: readings))
    metric = CpuTemperature()
    assert metric.update(None, META).formatted == "CPU Temperature: 55.00 °C" and metric.value() == 55.0


def no_gpu(monkeypatch):
    monkeypatch.setattr(cuda, "_load_pynvml", lambda: None)
    monkeypatch.setattr(cuda, "_nvidia_smi", lambda: None)


def test_gpu_metrics_without_a_gpu_are_not_available(monkeypatch):
    no_gpu(monkeypatch)
    entry = CudaMetric().update(None, META)
    assert not entry.available and "not available" in entry.formatted and entry.serialize == "not available"
    temperature = GpuTemperature()
    entry = temperature.update(None, META)
    assert not entry.available and "not available" in entry.formatted and math.isnan(temperature.value())


def test_gpu_metrics_from_nvidia_smi(monkeypatch):
    monkeypatch.setattr(cuda, "_load_pynvml", lambda: None)
    monkeypatch.setattr(cuda, "_nvidia_smi", lambda: "/usr/bin/nvidia-smi")
    out = "0, 1024, 81559, 37, 41\n1, 0, 81559, [N/A], 38\n"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: SimpleNamespace(stdout=out, returncode=0))
    entry = CudaMetric().update(None, META)
    assert entry.available and entry.formatted.startswith("GPU #0 - Memory 1.07/85.52 GB - Usage 37%")
    temperature = GpuTemperature()
    assert temperature.update(None, META).available and temperature.value() == 41.0


def test_gpu_metrics_when_nvidia_smi_fails(monkeypatch):
    monkeypatch.setattr(cuda, "_load_pynvml", lambda: None)
    monkeypatch.setattr(cuda, "_nvidia_smi", lambda: "/usr/bin/nvidia-smi")

    def fail(*args, **kwargs):
        raise subprocess.CalledProcessError(9, "nvidia-smi", "NVIDIA-SMI has failed")

    monkeypatch.setattr(subprocess, "run", fail)
    assert not CudaMetric().update(None, META).available
    assert not GpuTemperature().update(None, META).available


def test_gpu_metrics_from_nvml(monkeypatch):
    handle = object()
    nvml = SimpleNamespace(
        NVML_TEMPERATURE_GPU=0, nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: handle,
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(used=2e9, total=8e9),
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=90),
        nvmlDeviceGetTemperature=lambda h, kind: 66)
    monkeypatch.setattr(cuda, "_load_pynvml", lambda: nvml)
    assert CudaMetric().update(None, META).formatted == "GPU #0 - Memory 2.00/8.00 GB - Usage 90%"
    metric = GpuTemperature()
    metric.update(None, META)
    assert metric.value() == 66.0


def test_machine_metrics_in_a_learner_never_crash(tmp_path, monkeypatch):
    no_gpu(monkeypatch)
    monkeypatch.setattr(system, "_load_psutil", lambda: None)
    x, y = make_data(32, 3)
    learner = (LearnerBuilder(tmp_path).renderer(MetricsRendererBase()).num_epochs(1)
               .metric_train(CpuUse()).metric_train_numeric(CpuMemory()).metric_train_numeric(CpuTemperature())
               .metric_train(CudaMetric()).metric_train_numeric(GpuTemperature())
               .metric_valid_numeric(LearningRateMetric())
               .build(make_model(), SgdConfig().init(), 0.1))
    learner.fit(ShuffledLoader(x, y, 16, 1), batches(x, y, 16, NdArray))
    assert (tmp_path / "train/epoch-1/CUDA_Stats.log").read_text() == "not available\nnot available\n"
    assert (tmp_path / "train/epoch-1/GPU_Temperature.log").read_text() == "NaN\nNaN\n"
    assert (tmp_path / "valid/epoch-1/Learning_Rate.log").read_text() == "NaN\nNaN\n"
