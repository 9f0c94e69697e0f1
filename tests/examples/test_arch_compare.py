"""`burnbook.examples.arch_compare` (chapter 05): the program's outputs from a
child process per Taichi arch agree with NdArray and with NumPy, a missing
Vulkan driver is reported rather than raised, and a failing child is an
error naming its arch."""

from __future__ import annotations

import os

import numpy as np
import pytest

from burnbook.backend import NdArray
from burnbook.examples import arch_compare
from burnbook.examples.arch_compare import ArchChildError, fmt, max_abs_diff, program, run_in_child


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    """The program on NdArray (NumPy), in this process."""
    return {k: t.to_numpy().astype(np.float64) for k, t in program(NdArray, NdArray.default_device()).items()}


@pytest.fixture(scope="module")
def cpu_run() -> arch_compare.ArchRun:
    return run_in_child("cpu")


def _assert_matches(run: arch_compare.ArchRun, reference: dict[str, np.ndarray]) -> None:
    assert run.outputs.keys() == reference.keys()
    for name, want in reference.items():
        np.testing.assert_allclose(run.outputs[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_reference_is_what_numpy_computes(reference: dict[str, np.ndarray]) -> None:
    x = np.array([[1.0, -2.0, 0.5], [2.0, -0.25, -0.5]])
    w = np.array([[0.5, -1.0], [1.5, 2.0], [-0.75, 0.25]])
    h = x @ w + [0.1, -0.2]
    e = np.exp(np.maximum(h, 0))
    n = 100_000
    want = {
        "x.exp() * 2 - 1": np.exp(x) * 2 - 1,
        "x.tanh().sum_dim(1)": np.tanh(x).sum(1, keepdims=True),
        "x @ w + b": h,
        "softmax(relu(x @ w + b), 1)": e / e.sum(1, keepdims=True),
        "sin(arange(100000) / 100000).mean()": [np.sin(np.arange(n) / n).mean()],
        "grad of tanh(x @ w).sum() in w": x.T @ (1 - np.tanh(x @ w) ** 2),
    }
    _assert_matches(arch_compare.ArchRun("numpy", outputs={k: np.asarray(v) for k, v in want.items()}),
                    reference)


def test_cpu_child_runs_on_the_cpu_and_matches_ndarray(cpu_run, reference) -> None:
    assert cpu_run.unavailable is None
    assert cpu_run.device.startswith("Cpu(")
    assert set(cpu_run.devices.values()) == {cpu_run.device}
    _assert_matches(cpu_run, reference)


@pytest.mark.gpu
def test_vulkan_child_runs_on_vulkan_and_matches_the_cpu(cpu_run, reference) -> None:
    run = run_in_child("vulkan")
    if run.unavailable:
        pytest.skip(f"no Vulkan device here: {run.unavailable}")
    assert run.device == "Vulkan" and set(run.devices.values()) == {"Vulkan"}
    _assert_matches(run, reference)
    assert max_abs_diff(cpu_run, run) <= 1e-5


def test_missing_vulkan_driver_is_reported_not_raised() -> None:
    nowhere = "/nonexistent/burnbook-no-icd.json"
    run = run_in_child("vulkan", env=dict(os.environ, VK_ICD_FILENAMES=nowhere, VK_DRIVER_FILES=nowhere))
    assert run.unavailable and "Vulkan" in run.unavailable
    assert run.outputs == {} and run.device is None


def test_a_failing_child_is_an_error_naming_its_arch() -> None:
    with pytest.raises(ArchChildError, match=r"'nosuch'[\s\S]*BURNBOOK_TAICHI_ARCH='nosuch'"):
        run_in_child("nosuch")


def test_fmt_rounds_to_significant_digits_and_keeps_nesting() -> None:
    assert fmt(np.array([[0.087065774, -0.0], [39.17107, 1e-9]])) == "[[0.087066, 0], [39.171, 1e-09]]"
    assert fmt(np.float64(2.0)) == "2"


def test_max_abs_diff_over_shared_outputs() -> None:
    a = arch_compare.ArchRun("a", outputs={"p": np.array([1.0, 2.0]), "q": np.array([0.0])})
    b = arch_compare.ArchRun("b", outputs={"p": np.array([1.0, 2.5]), "r": np.array([9.0])})
    assert max_abs_diff(a, b) == 0.5
