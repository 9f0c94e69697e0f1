"""Imported models compute quietly (issue 31, item 6).

Decoder exports (GPT-2, Llama, T5 with a dynamic sequence length) compute
±inf/NaN lanes by construction: a padding mask leaves a softmax row all
-inf, an additive mask is log(0), T5's relative-position buckets cast
log(0) to an integer, and a later Where discards those lanes. onnxruntime
computes them silently; burnbook printed NumPy RuntimeWarnings ("invalid
value encountered in subtract", "divide by zero encountered in log",
"invalid value encountered in cast"), the first two from a replay, whose
generated function was no frame of burnbook's, so burnbook's own filter did
not apply to it.

The rule (burnbook/module/replay.py's docstring): a call of an imported
model (`replay_call`, eager or replayed) runs under np.errstate with divide,
over and invalid ignored, whatever the warning filters say; a user's own
tensor ops outside it keep NumPy's warnings as before.

The graph below is a minimal T5/GPT-2-like attention with all three
constructs; its forward pass, run directly, provokes each warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

from burnbook import Bool, Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import build_model  # noqa: E402

WARNINGS = ("invalid value encountered in subtract", "divide by zero encountered in log",
            "invalid value encountered in cast")


def _const(name: str, value, dtype: int = TP.FLOAT):
    arr = np.asarray(value)
    return h.make_node("Constant", [], [name],
                       value=h.make_tensor(f"{name}_value", dtype, list(arr.shape), arr.ravel().tolist()))


def decoder_graph() -> onnx.ModelProto:
    """Attention scores x @ x^T with T5's bucketed relative-position bias
    (log of |i - j| / 4, 0 on the diagonal, cast to int, then Where keeps
    the exact small distances), a causal mask and a key padding mask as
    Where(mask, scores, -inf), then Softmax; batch and length are dynamic."""
    nodes = [
        h.make_node("Shape", ["x"], ["shape"]),
        _const("i0", 0, TP.INT64), _const("i1", 1, TP.INT64), _const("i4", 4, TP.INT64),
        _const("axis0", [0], TP.INT64), _const("axis1", [1], TP.INT64),
        h.make_node("Gather", ["shape", "i1"], ["length"], axis=0),
        h.make_node("Range", ["i0", "length", "i1"], ["positions"]),
        h.make_node("Unsqueeze", ["positions", "axis1"], ["query"]),
        h.make_node("Unsqueeze", ["positions", "axis0"], ["key"]),
        h.make_node("Sub", ["key", "query"], ["relative"]),
        h.make_node("Abs", ["relative"], ["distance"]),
        h.make_node("Cast", ["distance"], ["distance_f"], to=TP.FLOAT),
        _const("exact", 4.0), _const("scale", 2.0),
        h.make_node("Div", ["distance_f", "exact"], ["ratio"]),
        h.make_node("Log", ["ratio"], ["log_ratio"]),             # log(0) = -inf on the diagonal
        h.make_node("Mul", ["log_ratio", "scale"], ["scaled"]),
        h.make_node("Cast", ["scaled"], ["large_i"], to=TP.INT64),  # -inf to int: a discarded lane
        h.make_node("Add", ["large_i", "i4"], ["large"]),
        h.make_node("Less", ["distance", "i4"], ["small"]),
        h.make_node("Where", ["small", "distance", "large"], ["bucket"]),
        h.make_node("Cast", ["bucket"], ["bias"], to=TP.FLOAT),
        h.make_node("Transpose", ["x"], ["x_t"], perm=[0, 2, 1]),
        h.make_node("MatMul", ["x", "x_t"], ["scores"]),
        h.make_node("Add", ["scores", "bias"], ["biased"]),
        h.make_node("Shape", ["biased"], ["scores_shape"]),
        h.make_node("ConstantOfShape", ["scores_shape"], ["ones"],
                    value=h.make_tensor("one", TP.FLOAT, [1], [1.0])),
        h.make_node("Trilu", ["ones"], ["lower"], upper=0),
        h.make_node("Cast", ["lower"], ["causal"], to=TP.BOOL),
        h.make_node("Unsqueeze", ["keep", "axis1"], ["keep_keys"]),     # [b, 1, s]
        h.make_node("And", ["causal", "keep_keys"], ["visible"]),
        _const("minus_inf", -np.inf),
        h.make_node("Where", ["visible", "biased", "minus_inf"], ["masked"]),
        h.make_node("Softmax", ["masked"], ["y"], axis=-1),          # a padded first key: an all -inf row
    ]
    graph = h.make_graph(nodes, "decoder", [
        h.make_tensor_value_info("x", TP.FLOAT, ["batch", "length", 8]),
        h.make_tensor_value_info("keep", TP.BOOL, ["batch", "length"]),
    ], [h.make_tensor_value_info("y", TP.FLOAT, ["batch", "length", "length"])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    path = tmp_path_factory.mktemp("quiet") / "decoder.onnx"
    onnx.save(decoder_graph(), path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return build_model(path, backend=NdArray), ort.InferenceSession(str(path), options,
                                                                      providers=["CPUExecutionProvider"])


def _inputs(batch: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(batch * 10 + length).standard_normal((batch, length, 8)).astype(np.float32)
    keep = np.ones((batch, length), dtype=bool)
    keep[0, 0] = False   # sequence 0's first token is padding: its first query row sees no key
    return x, keep


def _tensors(x: np.ndarray, keep: np.ndarray) -> tuple:
    return Tensor[NdArray, 3].from_data(x), Tensor[NdArray, 2, Bool].from_data(keep)


def test_the_graph_provokes_each_warning_when_run_unguarded(decoder):
    """The forward pass itself, run outside the model's call, warns (else
    the test below would prove nothing)."""
    model, _ = decoder
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.forward(*_tensors(*_inputs(2, 5)))
    messages = {str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)}
    assert set(WARNINGS) <= messages, f"the graph no longer provokes {set(WARNINGS) - messages}"


def test_an_imported_decoder_runs_warning_free_and_agrees_with_onnxruntime(decoder):
    model, session = decoder
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # any warning fails the test, burnbook's own filter overridden
        # record, verify (eager and replay), replay; then a second length (dynamic dims)
        for batch, length in ((2, 5), (2, 5), (2, 5), (1, 9)):
            x, keep = _inputs(batch, length)
            got = model(*_tensors(x, keep)).to_numpy()
            want = session.run(None, {"x": x, "keep": keep})[0]
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
            assert np.isnan(got[0, 0]).all(), "the padded row is NaN, as onnxruntime computes it"
    assert np.geterr() == before, "the model's call left NumPy's error state changed"


def test_a_users_own_ops_still_warn_as_before(decoder):
    model, _ = decoder
    model(*_tensors(*_inputs(2, 5)))
    zero = Tensor[NdArray, 1].from_floats([0.0, 1.0])
    nan = Tensor[NdArray, 1].from_floats([float("nan"), 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
            zero.log()
        with pytest.raises(RuntimeWarning, match="invalid value encountered in cast"):
            nan.int()
    # Under burnbook's own filter (no user filter in front), an invalid cast of
    # the user's data still shows; float ops stay IEEE-silent, as they were.
    with warnings.catch_warnings(record=True) as caught:
        nan.int()
    assert any("invalid value encountered in cast" in str(w.message) for w in caught)
