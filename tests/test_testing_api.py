"""`burnbook.testing` as a reader uses it: `check_backend` and
`check_autodiff` on the project's backends (everything passes), on a
backend with one wrong op (exactly that op's cases fail, by name), on an
empty or half-written backend (missing, never an exception), and on a wrong
backward rule and a hand-written autodiff engine."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.autodiff import Autodiff
from burnbook.autodiff.graph import AutodiffTensor, track
from burnbook.backend import Backend, NdArray
from burnbook.backend.base import ALL_OPS, MODULE_OPS
from burnbook.testing import (CASES, ENTRY_POINTS, FAMILIES, GRAD_CASES, Report, check_autodiff,
                              check_backend, iter_cases, iter_grad_cases)

from .backend.conftest import _taichi


def _names(report_items):
    return sorted(x.case for x in report_items)


def _case_names(op):
    """The names of `op`'s cases that hold elements (a wrong value cannot show in an empty tensor)."""
    return sorted(c.name for c in CASES if c.op == op and all(a.size for a in c.arrays()))


# -- the project's own backends pass ---------------------------------------------------------

def test_ndarray_passes_every_case():
    report = check_backend(NdArray, progress=False)
    assert (report.failed, report.missing, report.passed) == (0, 0, len(CASES)), str(report)
    assert report.ok and report.failures == [] and report.missing_ops == []
    assert set(report.families) == set(FAMILIES)


def test_taichi_passes_every_case():
    report = check_backend(_taichi(), progress=False)
    assert report.ok, str(report)
    assert report.passed == len(CASES)


def test_autodiff_ndarray_passes_every_backward_case():
    report = check_autodiff(Autodiff[NdArray], progress=False)
    assert report.ok, str(report)
    assert report.passed == len(GRAD_CASES)


def test_autodiff_ndarray_passes_the_forward_cases_too():
    report = check_backend(Autodiff[NdArray], progress=False)
    assert report.ok, str(report)


def test_every_protocol_op_has_a_case():
    """Each op of the protocol is checked (the module ops' `*_backward`
    helpers through check_autodiff's rules)."""
    helpers = {op for op in MODULE_OPS if op.endswith("_backward")}
    assert sorted(set(ALL_OPS) - helpers - {c.op for c in CASES}) == []
    assert {c.family for c in CASES} == set(FAMILIES)


def test_every_differentiable_op_has_a_backward_case():
    from burnbook.autodiff.ops import TABLE
    helpers = {op for op in MODULE_OPS if op.endswith("_backward")}
    assert sorted(set(TABLE) - helpers - {c.op for c in GRAD_CASES}) == []


def test_case_names_are_unique_and_inputs_seeded():
    assert len({c.name for c in CASES}) == len(CASES)
    case = next(iter_cases("math", ops=["float_exp"]))
    a, b = case.arrays(), case.arrays()
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


# -- a wrong op, an empty backend, a half-written one ----------------------------------------

class WrongExp(NdArray):
    @staticmethod
    def float_exp(p):
        return np.exp(p) + np.float32(1.0)


def test_a_wrong_op_fails_exactly_its_own_cases():
    report = check_backend(WrongExp, progress=False)
    assert report.failed_ops == ["float_exp"]
    assert _names(report.failures) == _case_names("float_exp")
    assert report.missing == 0 and report.passed == len(CASES) - report.failed
    first = report.failures[0]
    assert first.op == "float_exp" and first.family == "math"
    assert "f32[" in first.inputs and "expected" in first.message and first.expected and first.got


def test_a_wrong_module_op_fails_its_cases():
    class WrongConv(NdArray):
        @classmethod
        def conv2d(cls, x, weight, bias, options):
            return NdArray.float_mul_scalar(NdArray.conv2d(x, weight, bias, options), 1.01)

    report = check_backend(WrongConv, families=["module"], progress=False)
    # NdArray runs some conv1d as a conv2d of height 1: those inherit the error
    assert set(_case_names("conv2d")) <= set(_names(report.failures))
    assert set(report.failed_ops) <= {"conv1d", "conv2d"}

    class WrongEmbedding(NdArray):
        @classmethod
        def embedding(cls, weights, indices):
            return NdArray.float_neg(NdArray.embedding(weights, indices))

    report = check_backend(WrongEmbedding, families=["module"], progress=False)
    assert _names(report.failures) == _case_names("embedding")


class Empty(Backend):
    """A backend with nothing but its existence (name and devices are missing too)."""


def test_an_empty_backend_is_all_missing_without_an_exception():
    report = check_backend(Empty, progress=False)
    assert (report.passed, report.failed, report.missing) == (0, 0, len(CASES))
    assert not report.ok
    assert {"default_device", "float_from_data", "float_exp", "int_add", "bool_not"} <= set(report.missing_ops)
    assert "missing ops" in str(report)


class Half(Backend):
    """A reader's first steps: data in and out, and exp."""

    @classmethod
    def name(cls):
        return "half"

    @classmethod
    def default_device(cls):
        return "cpu"

    @staticmethod
    def float_from_data(array, device):
        return np.array(array)

    @staticmethod
    def float_into_data(p):
        return np.array(p)

    float_exp = staticmethod(np.exp)

    @staticmethod
    def float_log(p):
        raise NotImplementedError("log comes in the next step")

    @staticmethod
    def float_sin(p):
        raise RuntimeError("the kernel crashed")


def test_a_half_written_backend_passes_what_it_has():
    report = check_backend(Half, families=["math"], progress=False)
    exp_cases = [c for c in CASES if c.op == "float_exp"]
    assert report.passed == len(exp_cases)
    assert report.failed_ops == ["float_sin"]
    assert all("raised RuntimeError: the kernel crashed" in f.message for f in report.failures)
    assert {"float_log", "float_cos"} <= set(report.missing_ops)
    assert "float_exp" not in report.missing_ops
    assert report.families["math"].missing == report.missing > 0


def test_a_reader_backend_without_a_kind_misses_that_kind_only():
    report = check_backend(Half, families=["int"], progress=False)
    assert report.passed == report.failed == 0
    assert "int_from_data" in report.missing_ops


# -- the report -------------------------------------------------------------------------------

def test_the_report_prints_a_table_and_html():
    report = check_backend(WrongExp, families=["math", "arithmetic"], progress=False)
    assert isinstance(report, Report)
    text = str(report)
    assert text == repr(report)
    assert text.splitlines()[0].startswith("check_backend(WrongExp): ")
    assert "math" in text and "arithmetic" in text and "float_exp[" in text
    html = report._repr_html_()
    assert "<table>" in html and html.count("<tr>") == 3 and "float_exp" in html
    assert report.families["math"].failed == len(_case_names("float_exp"))
    assert report.families["arithmetic"].failed == 0


def test_progress_goes_to_stderr_and_can_be_off(capsys):
    check_backend(NdArray, families=["comparison"], progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "check_backend(NdArray)" in err
    check_backend(NdArray, families=["comparison"], progress=False)
    assert capsys.readouterr() == ("", "")


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="unknown op families"):
        check_backend(NdArray, families=["maths"], progress=False)
    with pytest.raises(TypeError, match="backend class"):
        check_backend(NdArray.float_exp, progress=False)
    with pytest.raises(TypeError, match="Autodiff"):
        check_autodiff(NdArray, progress=False)


# -- backward rules -----------------------------------------------------------------------------

class WrongExpRule(Autodiff[NdArray]):
    """Autodiff[NdArray] with exp's backward off by the output itself."""

    InnerBackend = NdArray

    @staticmethod
    def float_exp(x):
        out = NdArray.float_exp(x.primitive)
        if x.node is None:
            return AutodiffTensor(out, None)

        def rule(B, g, n, saved_out):
            return (B.float_mul(g, B.float_add_scalar(saved_out, 1.0)),)
        return track("exp", (x.node,), out, tuple(out.shape), rule, (out,))


def test_a_wrong_backward_rule_is_reported_by_op():
    report = check_autodiff(WrongExpRule, progress=False)
    assert report.failed_ops == ["float_exp"]
    assert _names(report.failures) == sorted(c.name for c in GRAD_CASES if c.op == "float_exp")
    assert "finite diff" in report.failures[0].message
    assert report.missing == 0


class _Node:
    def __init__(self, value, parents=(), rule=None):
        self.value, self.parents, self.rule = value, parents, rule


class Tiny(Backend):
    """A reader's reverse-mode engine over NdArray with rules for mul, exp
    and sum only (no broadcasting in mul's rule: a bug check_autodiff names)."""

    is_autodiff = True
    InnerBackend = NdArray

    @classmethod
    def name(cls):
        return "tiny"

    @classmethod
    def default_device(cls):
        return NdArray.default_device()

    float_from_data = staticmethod(lambda a, d: _Node(NdArray.float_from_data(a, d)))
    float_into_data = staticmethod(lambda p: NdArray.float_into_data(p.value))
    float_shape = staticmethod(lambda p: p.value.shape)
    float_dtype = staticmethod(lambda p: p.value.dtype)
    float_require_grad = staticmethod(lambda p: p)
    float_grad = staticmethod(lambda p, grads: grads.get(id(p)))

    @staticmethod
    def float_mul(a, b):
        return _Node(a.value * b.value, (a, b), lambda g: (g * b.value, g * a.value))

    @staticmethod
    def float_exp(a):
        v = np.exp(a.value)
        return _Node(v, (a,), lambda g: (g * v,))

    @staticmethod
    def float_sum(a):
        return _Node(a.value.sum().reshape(1), (a,), lambda g: (np.broadcast_to(g, a.value.shape),))

    @staticmethod
    def float_backward(p):
        order, seen = [], set()

        def visit(n):
            if id(n) not in seen:
                seen.add(id(n))
                for q in n.parents:
                    visit(q)
                order.append(n)
        visit(p)
        grads = {id(p): np.ones_like(p.value)}
        for n in reversed(order):
            g = grads.get(id(n))
            if g is not None and n.rule is not None:
                for q, gq in zip(n.parents, n.rule(g)):
                    grads[id(q)] = grads.get(id(q), 0) + gq
        return grads


def test_a_hand_written_engine_gets_missing_not_a_crash():
    report = check_autodiff(Tiny, progress=False)
    passed = {c.name for c in GRAD_CASES} - {m.case for m in report.missed} - {f.case for f in report.failures}
    assert {c.name for c in iter_grad_cases(ops=["float_exp", "float_sum"])} <= passed
    assert report.failed_ops == ["float_mul"]   # the broadcast cases: gradient of the wrong shape
    assert all("does not have the input's shape" in f.message for f in report.failures)
    assert {"float_log", "float_add", "float_matmul"} <= set(report.missing_ops)
    assert report.passed + report.failed + report.missing == len(GRAD_CASES)


def test_check_autodiff_names_the_entry_points_it_needs():
    class NoBackward(Tiny):
        float_backward = Backend.float_backward if hasattr(Backend, "float_backward") else None

    report = check_autodiff(NoBackward, families=["math"], progress=False)
    assert report.passed == 0 and "float_backward" in report.missing_ops
    assert set(ENTRY_POINTS) >= {"float_require_grad", "float_backward", "float_grad"}


_BELOW_TESTING = ("burnbook.kernels", "burnbook.backend", "burnbook.tensor", "burnbook.autodiff",
                  "burnbook.module", "burnbook.nn", "burnbook.optim", "burnbook.record",
                  "burnbook.config", "burnbook.data", "burnbook.train")


def test_nothing_below_testing_imports_it():
    """testing sits above the framework (the book's chapters, above it, may use it)."""
    from .test_architecture import GRAPH

    up = sorted((m, t) for m, targets in GRAPH.items()
                if any(m == low or m.startswith(low + ".") for low in _BELOW_TESTING)
                for t in targets if t.startswith("burnbook.testing"))
    assert up == [], f"modules below burnbook.testing that import it: {up}"


def test_the_comparison_says_what_differs():
    from burnbook.testing.compare import compare

    f32 = np.float32
    assert compare(np.array([np.nan, np.inf, 1.0]), np.array([np.nan, np.inf, 1.0], f32), f32, 1e-5, 1e-6) is None
    message = compare(np.array([np.inf, 1.0]), np.array([1.0, 1.0], f32), f32, 1e-5, 1e-6)[0]
    assert message.startswith("at [0]: expected inf, got 1")
    assert compare(np.ones((2, 3)), np.ones((3, 2), f32), f32, 0, 0)[0] == "shape [3, 2], expected [2, 3]"
    assert compare(np.ones(2), np.ones(2), f32, 0, 0)[0] == "element type f64, expected f32"
    assert compare(np.array([1, 2]), np.array([1, 3]), f32, 0, 0)[0].startswith("at [1]: expected 2, got 3")
    # exp(100) rounds to inf in f32: an f32 result of inf is right
    assert compare(np.array([np.exp(100.0)]), np.array([np.inf], f32), f32, 1e-5, 1e-6) is None
    assert compare((2, 3), (2, 3), f32, 0, 0) is None and compare((2, 3), [2, 4], f32, 0, 0) is not None


def _perturbed(result):
    """A result made wrong: floats + 0.5, ints + 1, bools flipped, shapes + 1."""
    if isinstance(result, tuple) and result and isinstance(result[0], np.ndarray):
        return (_perturbed(result[0]),) + result[1:]
    if isinstance(result, np.ndarray):
        kind = result.dtype.kind
        return result + np.asarray(0.5, result.dtype) if kind == "f" else ~result if kind == "b" else result + 1
    return tuple(v + 1 for v in result) if isinstance(result, tuple) else None


def test_every_op_s_cases_catch_a_wrong_answer():
    """No case is vacuous: NdArray with any one op's answer made wrong fails
    a case of that op (`*_empty` excepted: its values are undefined, so its
    case checks the shape, which this perturbation leaves alone)."""
    uncaught = []
    for op in sorted({c.op for c in CASES} - {"float_empty", "int_empty", "bool_empty"}):
        right = getattr(NdArray, op)
        wrong = type(f"Wrong_{op}", (NdArray,),
                     {op: staticmethod(lambda *a, _right=right, **k: _perturbed(_right(*a, **k)))})
        if check_backend(wrong, ops=[op], progress=False).failed == 0:
            uncaught.append(op)
    assert uncaught == []


def test_ops_needed_lists_what_a_family_calls():
    from burnbook.testing import ops_needed

    math_ops = ops_needed("math")
    assert {"float_exp", "float_from_data", "float_into_data"} <= set(math_ops)
    assert not any(op.startswith("int_") for op in math_ops)


def test_a_broken_default_device_fails_every_case_with_its_message():
    class Broken(NdArray):
        @classmethod
        def default_device(cls):
            raise RuntimeError("no such device")

    report = check_backend(Broken, families="math", progress=False)
    assert report.failed == len(list(iter_cases("math"))) and report.passed == 0
    assert report.failures[0].message == "default_device() raised RuntimeError: no such device"
    ad = check_autodiff(type("BrokenTiny", (Tiny,), {"default_device": Broken.default_device}),
                        families="math", progress=False)
    assert ad.failed == len(list(iter_grad_cases("math")))


def test_check_autodiff_runs_in_f32_on_a_backend_without_f64():
    """A device with no f64 (Metal, a Vulkan device without shaderFloat64)
    keeps f64 data as f32: `check_autodiff` sees that and runs every backward
    case in f32 with its looser finite differences, and they pass; a wrong
    rule still fails there."""
    from burnbook.testing.autodiff import supports_f64

    def narrow(dtype):
        return np.float32 if np.dtype(dtype) == np.float64 else dtype

    class F32Only(NdArray):
        @staticmethod
        def float_from_data(array, device):
            a = np.asarray(array)
            return np.array(a, dtype=narrow(a.dtype), copy=True)

        @staticmethod
        def float_cast(p, dtype):
            return NdArray.float_cast(p, narrow(dtype))

    assert supports_f64(NdArray, None) and not supports_f64(F32Only, None)
    report = check_autodiff(Autodiff[F32Only], progress=False)
    assert (report.passed, report.failed, report.missing) == (len(GRAD_CASES), 0, 0)

    class WrongExp(F32Only):
        @staticmethod
        def float_exp(p):
            # exp's rule multiplies by the saved output: 0.05 too much, past f32's tolerances
            return np.exp(p) + np.float32(0.05)

    wrong = check_autodiff(Autodiff[WrongExp], families=["math"], progress=False)
    assert "float_exp" in wrong.failed_ops
