"""Chapter 19's checks accept right answers and refuse the typical wrong ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from burnbook.backend import NdArray
from burnbook.book import exercises
from burnbook.importer.onnx import OnnxImportError, build_model

ASSETS = Path(__file__).resolve().parents[2] / "notebooks" / "assets"
ex = exercises("19")
RNG = np.random.default_rng(0)
W = RNG.normal(size=(4, 3)).astype(np.float32)
B = RNG.normal(size=3).astype(np.float32)


def graph(ops: list[str], w=W, b=B):
    """x [batch, 4] -> MatMul W -> Add b -> each op of `ops` in turn."""
    nodes = [helper.make_node("MatMul", ["x", "W"], ["t0"]), helper.make_node("Add", ["t0", "b"], ["t1"])]
    for i, op in enumerate(ops):
        nodes.append(helper.make_node(op, [f"t{i + 1}"], [f"t{i + 2}"], **({"axis": 1} if op == "Softmax" else {})))
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                          [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def softmax_graph(axis: int):
    model = graph(["Relu", "Softmax"])
    model.graph.node[-1].attribute[0].i = axis
    return model


def unique_error() -> OnnxImportError:
    with pytest.raises(OnnxImportError) as info:
        build_model(graph(["Relu", "Unique"]), backend=NdArray)
    return info.value


def test_read_the_model():
    assert ex[1].verdict((784 * 64 + 64 + 64 * 10 + 10, [5, 10])).ok
    assert ex[1].verdict((50890, (5, 10))).ok
    assert "parameter count" in ex[1].verdict((784 * 64 + 64 * 10, [5, 10])).message  # biases left out
    assert "shape" in ex[1].verdict((50890, [1, 10])).message
    assert "off at" in ex[1].verdict((50890, [10, 5])).message
    assert "parameter count" in ex[1].verdict((50890.5, [5, 10])).message


def test_your_own_graph():
    model = build_model(graph(["Relu"]), backend=NdArray)
    assert ex[2].verdict((model, W, B)).ok
    no_relu = build_model(graph([]), backend=NdArray)
    assert "off at" in ex[2].verdict((no_relu, W, B)).message
    assert "off" in ex[2].verdict((model, W, np.zeros(3))).message  # the W, b said are not the model's
    assert "W [4, 3]" in ex[2].verdict((model, W.T, B)).message


def test_one_more_operator():
    model = build_model(softmax_graph(1), backend=NdArray)
    error = unique_error()
    assert ex[3].verdict((model, error)).ok
    over_batch = build_model(softmax_graph(0), backend=NdArray)
    assert "row sums" in ex[3].verdict((over_batch, error)).message
    assert "row sums" in ex[3].verdict((build_model(graph(["Relu"]), backend=NdArray), error)).message
    assert "ValueError" in ex[3].verdict((model, ValueError("Unique"))).message
    assert "does not name Unique" in ex[3].verdict((model, OnnxImportError("cannot import: Foo"))).message
    assert "exception" in ex[3].verdict((model, "Unique")).message


def test_fine_tune(tmp_path):
    original = build_model(ASSETS / "mnist_mlp.onnx", backend=NdArray)
    tuned = original.map_params(lambda _, p: p.with_value(p.val() * 0.9))
    tuned.save_file(tmp_path / "tuned")
    reloaded = type(original).from_file(tmp_path / "tuned", backend=NdArray)
    assert ex[4].verdict((tuned, reloaded)).ok
    assert "original" in ex[4].verdict((tuned, original)).message          # reloaded the file, not the save
    assert "did its training" in ex[4].verdict((original, original)).message
    other = original.map_params(lambda _, p: p.with_value(p.val() * 1.1))
    assert "reloaded model's output" in ex[4].verdict((tuned, other)).message
