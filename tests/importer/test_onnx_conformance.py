"""ONNX conformance: the node test cases that ship inside the `onnx` package,
run through the importer for every supported operator.

A case is selected when every node of its graph is a supported operator: the
single-node cases of each operator, plus the multi-node ones (mostly
`*_expanded` function bodies) made only of supported operators. Each case is
translated in memory (ONNX graph -> generated source -> module with its
weights), run on NdArray, and compared with the expected outputs at the
case's own tolerances. A table of passes per operator is printed, and the
overall pass rate must be at least 90%.

Conventions of the comparison, because burnbook tensors are f32/i64/bool and
have rank >= 1: inputs are converted to those element types, scalars are
`[1]`, and outputs are compared with the expected values in f32/i64/bool
(an output of shape `[1]` stands for an ONNX scalar).
"""

from __future__ import annotations

import warnings
from collections import defaultdict

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from burnbook import Bool, Float, Int, Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import build_model, supported_ops  # noqa: E402
from burnbook.importer.onnx.graph import elem_info  # noqa: E402

BAR = 0.90
KINDS = {"Float": Float, "Int": Int, "Bool": Bool}
MULTI = "(multi-node)"
# operators whose outputs are random draws: their shipped expected values
# came from another generator, so those outputs are held to shape, element
# kind and value set (tests/importer/test_onnx_shape.py checks the statistics)
RANDOM = {"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}
# operators the onnx package ships no node case for (test_onnx_norm.py checks them against onnxruntime)
NO_SHIPPED_CASES = {"GlobalLpPool"}


def _array(value) -> np.ndarray:
    if isinstance(value, onnx.TensorProto):
        return np.asarray(onnx.numpy_helper.to_array(value))
    return np.asarray(value)


def _as_input(vi, value) -> object:
    """A burnbook tensor for one graph input (kinds as burnbook has them)."""
    kind = elem_info(vi.type.tensor_type.elem_type)[0]
    K = KINDS[kind]
    array = _array(value)
    array = array.reshape(1) if array.ndim == 0 else array
    return Tensor[NdArray, array.ndim, K].from_data(array.astype(K.default_dtype))


def _matches(got, expected: np.ndarray, rtol: float, atol: float) -> None:
    ours = got.to_numpy()
    if expected.dtype == np.bool_:
        want = expected
    elif expected.dtype.kind in "iu":
        want = expected.astype(np.int64)
    else:  # float16/32/64, bfloat16 and the float8 types, all exact in f32 or rounded to it
        want = expected.astype(np.float32)
    if ours.shape != want.shape and ours.size == want.size == 1 and want.ndim == 0:
        ours = ours.reshape(())
    assert ours.shape == want.shape, f"shape {list(ours.shape)}, expected {list(want.shape)}"
    np.testing.assert_allclose(ours.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                               equal_nan=True)


def _matches_draw(got, expected: np.ndarray) -> None:
    """A random output: its shape and kind, and 0/1 values where the expected draw has only those."""
    ours = got.to_numpy()
    if ours.shape != expected.shape and ours.size == expected.size == 1 and expected.ndim == 0:
        ours = ours.reshape(())
    assert ours.shape == expected.shape, f"shape {list(ours.shape)}, expected {list(expected.shape)}"
    family = {"b": "b", "i": "iu", "u": "iu"}.get(expected.dtype.kind, "f")
    assert ours.dtype.kind in family, f"element type {ours.dtype}, expected {expected.dtype}"
    if np.isin(expected, [0, 1]).all():
        assert np.isin(ours, [0, 1]).all(), f"values {np.unique(ours)[:5]} in a 0/1 draw"


def run_case(case) -> None:
    """Import and run one node test case; raises on any difference."""
    model = build_model(case.model, backend=NdArray)
    random = any(n.op_type in RANDOM for n in case.model.graph.node)
    initialised = {t.name for t in case.model.graph.initializer}
    inputs = [vi for vi in case.model.graph.input if vi.name not in initialised]
    for feeds, expected in case.data_sets:
        outs = model(*[_as_input(vi, v) for vi, v in zip(inputs, feeds)])
        outs = outs if isinstance(outs, tuple) else (outs,)
        assert len(outs) >= len(expected)
        for got, want in zip(outs, expected):
            if random:
                _matches_draw(got, _array(want))
            else:
                _matches(got, _array(want), case.rtol, case.atol)


@pytest.fixture(scope="module")
def node_cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    ops = set(supported_ops())
    selected = []
    for case in cases:
        types = [n.op_type for n in case.model.graph.node]
        if types and all(t in ops for t in types):
            single = len(types) == 1 and not case.name.endswith("_expanded")
            selected.append((types[0] if single else MULTI, case))
    return selected


def test_node_cases_of_supported_operators(node_cases, record_property):
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    failures: list[str] = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for op, case in node_cases:
            counts[op][1] += 1
            try:
                run_case(case)
                counts[op][0] += 1
            except Exception as err:  # one table for all, whatever the reason
                lines = str(err).strip().splitlines() or [type(err).__name__]
                # an import error's first line is a heading; its reasons follow
                reason = lines[1].strip(" -") if len(lines) > 1 and lines[0].endswith(":") else lines[0]
                failures.append(f"{case.name}: {reason[:110]}")
    passed = sum(p for p, _ in counts.values())
    total = sum(n for _, n in counts.values())
    rows = [f"{op:<20} {p:>4} / {n:<4}" for op, (p, n) in sorted(counts.items())]
    table = "\n".join(["", "ONNX node test cases through burnbook's importer (passed / run):", *rows,
                       f"{'total':<20} {passed:>4} / {total:<4} ({passed / total:.1%})",
                       "not passing:", *(f"  {f}" for f in failures)])
    record_property("report", table)  # tests/conftest.py prints it in the run's summary
    # every supported operator has shipped cases, and each passes some
    missing = sorted(set(supported_ops()) - set(counts) - RANDOM - NO_SHIPPED_CASES)
    assert not missing, f"no node test case ran for {missing}"
    assert all(p > 0 for p, _ in counts.values()), table
    assert passed / total >= BAR, table


def test_a_wrong_result_is_caught(node_cases):
    """The comparison is not vacuous: a perturbed expected output fails."""
    op, case = next((op, c) for op, c in node_cases if op == "Relu")
    feeds, expected = case.data_sets[0]
    bad = [_array(expected[0]) + 1e-2]
    case.data_sets[0] = (feeds, bad)
    try:
        with pytest.raises(AssertionError):
            run_case(case)
    finally:
        case.data_sets[0] = (feeds, expected)
