"""Checks for chapter 19, Import ONNX Model.

The MNIST MLP's expected numbers come from the ONNX file itself, read with
`onnx.numpy_helper` and run with NumPy, not from burnbook's importer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from burnbook import Tensor
from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.importer.onnx import OnnxImportError

TITLE = "Import ONNX Model"
_MLP = Path(__file__).resolve().parents[3] / "notebooks" / "assets" / "mnist_mlp.onnx"


def _parts(answer, names: tuple[str, ...]) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != len(names):
        raise AnswerError(f"your answer is {describe(answer)}; pass a {len(names)}-tuple ({', '.join(names)})")
    return tuple(answer)


def _mlp_weights() -> dict[str, np.ndarray]:
    """The MLP's initializers by name (fc1.weight [64, 784], ...)."""
    return {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(_MLP).graph.initializer}


def _mlp_numpy(images: np.ndarray) -> np.ndarray:
    """The file's graph by hand: Flatten, Gemm (transB), Relu, Gemm. [batch, 1, 28, 28] -> [batch, 10]."""
    w = _mlp_weights()
    hidden = np.maximum(images.reshape(len(images), -1) @ w["fc1.weight"].T + w["fc1.bias"], 0.0)
    return hidden @ w["fc2.weight"].T + w["fc2.bias"]


def _forward(model, x: np.ndarray, what: str) -> np.ndarray:
    """`model` (any backend: moved outside autodiff with valid()) run on NdArray data `x`."""
    if not hasattr(model, "forward") or not hasattr(model, "valid"):
        raise AnswerError(f"{what} is {describe(model)}; pass the imported model (a burnbook Module)")
    module = call_reader(model.valid, what=f"{what}.valid()")
    tensor = Tensor[NdArray, x.ndim].from_data(x.astype(np.float32), NdArray.default_device())
    out = call_reader(module.forward, tensor, what=f"{what}'s forward", on=f"on a {list(x.shape)} input")
    return as_array(out, f"{what}'s output")


def _read_the_model(answer) -> str | None:
    count, shape = _parts(answer, ("the number of parameters", "the output's shape for 5 images"))
    expected = sum(w.size for w in _mlp_weights().values())
    problem = compare(count, expected, "your parameter count", rtol=0, atol=0)
    if problem:
        return problem + " (count every weight and every bias of both layers)"
    out = onnx.load(_MLP).graph.output[0].type.tensor_type.shape.dim
    expected_shape = [5 if d.dim_param else d.dim_value for d in out]
    return compare(list(shape) if isinstance(shape, (tuple, list)) else shape, expected_shape,
                   "your output shape", rtol=0, atol=0)


def _rng_batches(width: int) -> list[np.ndarray]:
    rng = np.random.default_rng(19)
    return [rng.normal(size=(n, width)) for n in (6, 1, 17)]


def _small_graph(answer) -> str | None:
    model, w, b = _parts(answer, ("the imported model", "W", "b"))
    w, b = as_array(w, "your W").astype(np.float64), as_array(b, "your b").astype(np.float64)
    if w.shape != (4, 3) or b.shape != (3,):
        return f"W has shape {list(w.shape)} and b {list(b.shape)}; the exercise asks for W [4, 3] and b [3]"
    for i, x in enumerate(_rng_batches(4)):
        got = _forward(model, x, "your model")
        problem = compare(got, np.maximum(x @ w + b, 0.0), f"your model's output for a batch of {len(x)}"
                          + ("" if i == 0 else " (a batch size the chapter did not use)"), rtol=1e-4, atol=1e-5)
        if problem:
            return problem
    return None


def _one_more_operator(answer) -> str | None:
    model, error = _parts(answer, ("the model ending in Softmax", "the OnnxImportError for Unique"))
    for x in _rng_batches(4):
        got = _forward(model, x, "your Softmax model")
        if got.shape != (len(x), 3):
            return f"your Softmax model gives shape {list(got.shape)} for a batch of {len(x)}, not [{len(x)}, 3]"
        problem = compare(got.sum(axis=1), np.ones(len(x)), f"the row sums for a batch of {len(x)}",
                          rtol=1e-5, atol=1e-5)
        if problem:
            return problem + " (is the Softmax over axis 1, each row, not over the batch?)"
        if (got < 0).any():
            return "your Softmax model gives negative probabilities"
    if not isinstance(error, BaseException):
        return f"the second item is {describe(error)}; pass the exception you caught (`except OnnxImportError as err`)"
    if not isinstance(error, OnnxImportError):
        return f"the second item is a {type(error).__name__}, not the OnnxImportError the importer raises"
    if "Unique" not in str(error):
        return "the OnnxImportError you passed does not name Unique: is it from the graph ending in Unique?"
    return None


def _fine_tune(answer) -> str | None:
    tuned, reloaded = _parts(answer, ("the fine-tuned model", "the model rebuilt with from_file"))
    images = np.random.default_rng(4).normal(size=(4, 1, 28, 28))
    got_tuned = _forward(tuned, images, "your fine-tuned model")
    got_reloaded = _forward(reloaded, images, "your reloaded model")
    if got_reloaded.shape != (4, 10):
        return f"your reloaded model gives shape {list(got_reloaded.shape)} for 4 images, not [4, 10]"
    original = _mlp_numpy(images)
    if np.allclose(got_tuned, original, atol=1e-5):
        return "your fine-tuned model still gives the file's original outputs: did its training steps update it?"
    problem = compare(got_reloaded, got_tuned, "the reloaded model's output", rtol=1e-5, atol=1e-6)
    if problem:
        if np.allclose(got_reloaded, original, atol=1e-5):
            return "your reloaded model gives the original file's outputs, not the fine-tuned ones"
        return problem + ", compared with the fine-tuned model's"
    return None


EXERCISES = [
    Exercise("19", 1, "Read a generated model", _read_the_model,
             expects="a pair (the number of parameters, the output's shape for a batch of 5 as a list)",
             hints=("Each Gemm holds a weight [out, in] and a bias [out]; the parameters are all of them.",
                    "The output's first axis is the file's symbolic 'batch'; the second is the last Gemm's out.")),
    Exercise("19", 2, "Your own ONNX graph", _small_graph,
             expects="a triple (the imported model, W, b) with W [4, 3] and b [3] your NumPy initializers",
             hints=("The model must compute Relu(x @ W + b) for any batch size, with your own W and b.",
                    "Declare x's first axis as the symbolic 'batch', and keep both W and b as initializers.")),
    Exercise("19", 3, "One more operator", _one_more_operator,
             expects="a pair (the imported model ending in Softmax, the OnnxImportError caught for Unique)",
             hints=("Softmax with axis 1 normalises each row: every row of probabilities sums to 1.",
                    "Catch the importer's error with `except OnnxImportError as err` and pass err.")),
    Exercise("19", 4, "Fine-tune, save, reload", _fine_tune,
             expects="a pair (the fine-tuned model, the model rebuilt with Model.from_file)",
             hints=("The reloaded model must answer exactly as the fine-tuned one, and differ from the file.",
                    "Pass the path save_file returned (or the same stem) to Model.from_file.")),
]
