"""Checks for chapter 18, Saving and loading models.

Shapes and sizes come from counting the chapter's model (10 -> 64 -> 2);
the embedded source is run and its bytes loaded; the new-task model is
compared weight by weight with the saved one it should share a layer with."""

from __future__ import annotations

import numpy as np

from burnbook import Distribution, Tensor
from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, describe
from burnbook.record import BinBytesRecorder, FullPrecisionSettings, RecordError

TITLE = "Saving and loading models"

_D_IN, _HIDDEN, _D_OUT = 10, 64, 2
_PARAMS = _D_IN * _HIDDEN + _HIDDEN + _HIDDEN * _D_OUT + _D_OUT
_FULL_SIZE = 3818  # the chapter's model.mpk, in bytes


def _shape(value, what: str) -> list[int]:
    shape = as_array(value, what)
    if shape.ndim != 1 or shape.dtype.kind not in "iu":
        raise AnswerError(f"{what} is not a shape (a list of whole numbers such as [3, 4])")
    return [int(v) for v in shape]


def _error_names(answer) -> str | None:
    if not isinstance(answer, dict):
        raise AnswerError(f"your answer is {describe(answer)}; pass a dict {{parameter path: (shape in the record, "
                          "shape in the module)}}")
    right = {"linear_in.weight": ([_D_IN, _HIDDEN], [12, _HIDDEN])}
    named = {str(k).strip() for k in answer}
    if "linear_in.bias" in named:
        return "linear_in.bias is not named: a bias has one value per output unit, and there are still 64"
    if any(k.startswith("linear_out") for k in named):
        return "linear_out is not named: nothing after the first layer depends on the number of inputs"
    if named != set(right):
        return f"the error names other parameters than {sorted(named)}; name them by path, as 'layer.param'"
    pair = answer[next(k for k in answer if str(k).strip() == "linear_in.weight")]
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        return f"the value for linear_in.weight is {describe(pair)}; pass (shape in the record, shape in the module)"
    record, module = (_shape(v, w) for v, w in zip(pair, ("the record's shape", "the module's shape")))
    expected_record, expected_module = right["linear_in.weight"]
    if (record, module) == (expected_module, expected_record):
        return "the two shapes are swapped: the record holds what was saved, with 10 inputs"
    if record == expected_record[::-1] or module == expected_module[::-1]:
        return "a Linear weight is [d_input, d_output] in burnbook, as in Burn (PyTorch's is the transpose)"
    if (record, module) != (expected_record, expected_module):
        return "the shapes are not those of linear_in.weight in the record and in the new module"
    return None


def _save_small(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair (the compact file's size in bytes, "
                          "the largest difference of the outputs)")
    size, difference = (as_array(v, w) for v, w in zip(answer, ("the size", "the difference")))
    if size.size != 1 or difference.size != 1:
        return "pass two single numbers: the size and the largest difference"
    size, difference = float(size.reshape(-1)[0]), float(difference.reshape(-1)[0])
    if abs(size - _FULL_SIZE / 2) <= 16:
        return "half of the whole file is too small: only the values shrink, the names and structure stay"
    if abs(size - (_FULL_SIZE - 2 * _PARAMS)) > 16:
        return "your size is not the full file less the bytes that half precision saves on each value"
    if difference == 0:
        return "a difference of exactly 0: did the compared model load the compact (half-precision) file?"
    if not 0 < difference < 1e-3:
        return ("your difference is not what f16 rounding gives (each weight is off by at most 2^-11 "
                "of itself): compare the outputs on x of the loaded model and `expected`")
    return None


def _embedded(answer) -> str | None:
    if not isinstance(answer, str):
        raise AnswerError(f"your answer is {describe(answer)}; pass the module's source text (a str)")
    namespace: dict = {}
    call_reader(lambda: exec(compile(answer, "<your embedded module>", "exec"), namespace),
                what="running your source", timeout=10.0)
    blob = namespace.get("MODEL_BYTES")
    if not isinstance(blob, (bytes, bytearray)):
        return f"your source does not set MODEL_BYTES to bytes (it is {describe(blob)})"
    try:
        record = BinBytesRecorder(FullPrecisionSettings).load(bytes(blob))
    except RecordError as err:
        return f"MODEL_BYTES is not a record BinBytesRecorder reads ({str(err)[:80]})"
    names = set(record.flatten())
    if not {"linear_in.weight", "linear_out.weight"} <= names:
        return "MODEL_BYTES holds a record, but not the chapter's model (linear_in, linear_out)"
    per_byte = len(answer) / len(blob)
    if per_byte > 2.0:
        return f"your source takes {per_byte:.2f} characters per byte: that is repr's size, not base64's"
    if "b64decode" not in answer:
        return "your source does not decode base64 (base64.b64decode)"
    return None


def _new_head(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair (the saved model, the new 3-output model)")
    saved, new = answer
    for model, what in ((saved, "the saved model"), (new, "the new model")):
        if not all(hasattr(model, name) for name in ("linear_in", "linear_out", "into_record", "valid")):
            raise AnswerError(f"{what} is {describe(model)}, where the chapter's Model (linear_in, linear_out) "
                              "is expected")
    x = Tensor[NdArray, 2].random([5, _D_IN], Distribution.Default, NdArray.default_device())
    out = call_reader(lambda: new.valid()(x), what="the new model's forward", on="on a [5, 10] input")
    if list(out.dims()) != [5, 3]:
        return f"the new model gives {list(out.dims())} on a [5, 10] input, where [5, 3] (three outputs) is expected"
    for name in ("weight", "bias"):
        a = getattr(saved.linear_in, name).val().to_numpy()
        b = getattr(new.linear_in, name).val().to_numpy()
        if a.shape != b.shape or not np.array_equal(a, b):
            return f"the new model's linear_in.{name} is not the saved one: build it with init_with(record.linear_in)"
    try:
        new.load_record(saved.into_record())
    except RecordError:
        return None
    except Exception as err:
        return f"loading the whole saved record into the new model raised {type(err).__name__}, not a RecordError"
    return "the whole saved record loads into the new model: does its linear_out really have 3 outputs?"


EXERCISES = [
    Exercise("18", 1, "Predict the error", _error_names,
             expects="a dict {parameter path: (shape in the record, shape in the module)}",
             hints=("Only parameters whose shape depends on d_input change.",
                    "A Linear weight is [d_input, d_output]; its bias is [d_output].")),
    Exercise("18", 2, "Save small", _save_small,
             expects="a pair (the compact file's size in bytes, the largest output difference)",
             hints=("Half precision stores each of the model's values in 2 bytes instead of 4; the rest stays.",
                    "Count the values: two Linear layers, weights and biases.")),
    Exercise("18", 3, "Embed as text", _embedded,
             expects="the source text (a str) of your base64 module, which sets MODEL_BYTES",
             hints=("base64 writes 4 characters for every 3 bytes.",
                    "The module decodes with base64.b64decode(...) into MODEL_BYTES.")),
    Exercise("18", 4, "Keep the hidden layer, change the head", _new_head,
             expects="a pair (the saved model, your new 3-output model)",
             hints=("init_with works one layer at a time: take linear_in from the record, build linear_out afresh.",
                    "LinearConfig(64, 3).init(device) gives a new head.")),
]
