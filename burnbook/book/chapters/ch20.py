"""Checks for chapter 20, PyTorch Model.

The expected outputs are the ones PyTorch computed, kept in
`notebooks/assets/pytorch-outputs.safetensors`; the expected keys are the
`.pt` file's own, read raw (no module)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from burnbook import Tensor
from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.importer.pytorch import LoadArgs, PyTorchFileRecorder, read_safetensors
from burnbook.record import FullPrecisionSettings

TITLE = "PyTorch Model"
_ASSETS = Path(__file__).resolve().parents[3] / "notebooks" / "assets"
# The chapter's input image, and the Sequential's positions -> Mlp's fields.
_IMAGE_SEED, _FIELDS = 0, {"0": "fc1", "1": "norm", "3": "fc2"}
_NORM_PARAMS = ("weight", "bias", "running_mean", "running_var")


def _parts(answer, names: tuple[str, ...]) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != len(names):
        raise AnswerError(f"your answer is {describe(answer)}; pass a {len(names)}-tuple ({', '.join(names)})")
    return tuple(answer)


def _shape(value, what: str) -> list[int]:
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, np.integer)) for v in value):
        return [int(v) for v in value]
    raise AnswerError(f"{what} is {describe(value)}; a shape is a list of ints such as [2, 3] ([] for a scalar)")


def _raw_mlp() -> dict[str, list[int]]:
    raw = PyTorchFileRecorder(FullPrecisionSettings).load(LoadArgs(str(_ASSETS / "mlp.pt")),
                                                          NdArray.default_device())
    return {key: list(value.shape) for key, value in raw.items()}


def _predict_keys(answer) -> str | None:
    keys, fc1, unused = _parts(answer, ("{file key: shape}", "fc1.weight's shape in the record", "the unused keys"))
    raw = _raw_mlp()
    if not isinstance(keys, dict):
        return f"the first item is {describe(keys)}; pass a dict from each key of mlp.pt to its shape"
    if set(keys) != set(raw):
        missing, extra = sorted(set(raw) - set(keys)), sorted(set(keys) - set(raw))
        example = f" (e.g. one of layer {missing[0].split('.')[0]})" if missing else ""
        return (f"your keys are not the file's: {len(missing)} missing{example}"
                + (f", {extra[0]!r} is not in the file" if extra else "")
                + " (nn.Sequential names its layers by position: 0., 1., ...)")
    for key, shape in raw.items():
        if _shape(keys[key], f"your shape for {key!r}") != shape:
            return f"your shape for {key!r} is not the file's (PyTorch keeps a Linear's weight as [out, in])"
    first = raw["0.weight"]
    if _shape(fc1, "your fc1.weight shape") != first[::-1]:
        if _shape(fc1, "") == first:
            return "fc1.weight in the record is not in PyTorch's layout: burnbook's Linear keeps [d_input, d_output]"
        return "your fc1.weight shape is not the record's"
    if isinstance(unused, str) or not isinstance(unused, (set, frozenset, list, tuple)):
        return f"the unused keys are {describe(unused)}; pass a set (or list) of key strings"
    used = {f"{pos}.{name}" for pos, field in _FIELDS.items()
            for name in (_NORM_PARAMS if field == "norm" else ("weight", "bias"))}
    expected = {key for key in raw if key not in used}
    got = {str(k) for k in unused}
    if got - set(raw):
        return f"{sorted(got - set(raw))[0]!r} is not a key of the file"
    if got != expected:
        return ("a key you name is loaded into a parameter (BatchNorm's running statistics are kept, as its state)"
                if got - expected else "a key of the file that no parameter of Mlp holds is missing from your set")
    return None


def _forward(module, x: np.ndarray, what: str) -> np.ndarray:
    if not callable(getattr(module, "forward", None)):
        raise AnswerError(f"{what} is {describe(module)}; pass the module with its record loaded")
    tensor = Tensor[NdArray, x.ndim].from_data(x, NdArray.default_device())
    return as_array(call_reader(module.forward, tensor, what=f"{what}'s forward", on=f"on a {list(x.shape)} input"),
                    f"{what}'s output")


def _wrapped(answer) -> str | None:
    if not callable(getattr(answer, "named_params", None)):
        return f"your answer is {describe(answer)}; pass the WrappedNet module with key_remap.pt's record loaded"
    paths = [path for path, _ in answer.named_params()]
    if not all(path.startswith("conv.conv") for path in paths) or len(paths) != 3:
        return (f"your module's parameters are at {paths}; the file's keys are conv.conv1.weight, conv.conv1.bias and "
                "conv.conv2.weight, so the module needs a field conv holding the chapter's Net")
    image = np.random.default_rng(_IMAGE_SEED).standard_normal((1, 2, 4, 4)).astype(np.float32)
    problem = compare(_forward(answer, image, "your module"), read_safetensors(_ASSETS / "pytorch-outputs.safetensors")
                      ["key_remap"], "your module's output on the chapter's image", rtol=1e-5, atol=1e-6)
    return problem and problem + ", compared with PyTorch's (did you load the record into the module?)"


def _double(answer) -> str | None:
    record, difference = _parts(answer, ("the record loaded with DoublePrecisionSettings",
                                         "the largest |difference| between the two outputs"))
    try:
        dtype = str(record.conv1.weight.data.dtype)
    except AttributeError:
        return f"the first item is {describe(record)}; pass the record the double-precision recorder returned"
    if dtype != "f64":
        return f"your record holds {dtype} values: was it loaded with PyTorchFileRecorder(DoublePrecisionSettings)?"
    value = as_array(difference, "your difference")
    if value.size != 1:
        return f"your difference has {value.size} numbers; pass one, the largest absolute difference"
    if float(value.reshape(())) != 0.0:
        return ("your outputs differ: every f32 value survives a round trip through f64 exactly, and the module "
                "casts the record back to its own f32")
    return None


def _safetensors(answer) -> str | None:
    rng = np.random.default_rng(20)
    cases = [{"weight": rng.normal(size=(2, 3)), "bias": rng.normal(size=2)},
             {"a": rng.normal(size=(5, 4)), "b": rng.normal(size=7), "c": rng.normal(size=(2, 3, 2))}]
    with tempfile.TemporaryDirectory(prefix="burnbook-ch20-") as folder:
        for i, tensors in enumerate(cases):
            tensors = {k: v.astype(np.float32) for k, v in tensors.items()}
            path = os.path.join(folder, f"case{i}.safetensors")
            on = f"on {{{', '.join(f'{k!r}: {list(v.shape)}' for k, v in tensors.items())}}}"
            call_reader(answer, path, {k: v.copy() for k, v in tensors.items()}, what="your write_safetensors", on=on)
            if not os.path.isfile(path):
                return f"your write_safetensors wrote no file at the path it was given, {on}"
            try:
                back = read_safetensors(path)
            except Exception as err:
                return f"the file your write_safetensors wrote {on} is not a valid safetensors file: {err}"
            if list(back) != list(tensors):
                return f"the file written {on} holds the tensors {list(back)}, not {list(tensors)}"
            for name, array in tensors.items():
                if back[name].dtype != np.float32:
                    return f"{name!r} is stored as {back[name].dtype}, not F32 (float32 little-endian)"
                problem = compare(back[name], array, f"{name!r} read back from your file {on}", rtol=0, atol=0)
                if problem:
                    return problem
    return None


EXERCISES = [
    Exercise("20", 1, "Predict the keys", _predict_keys,
             expects="a triple ({key of mlp.pt: shape}, fc1.weight's shape in Mlp's record, the set of unused keys)",
             hints=("nn.Sequential names its layers by position; a Linear's weight is [out, in] in PyTorch.",
                    "The record is made for burnbook's modules (Linear keeps [d_input, d_output]); BatchNorm "
                    "keeps its running statistics but has no place for a counter.")),
    Exercise("20", 2, "Match the names instead of remapping them", _wrapped,
             expects="the WrappedNet module with key_remap.pt's record loaded into it",
             hints=("A parameter's path is its fields' names joined with dots.",
                    "A field named conv holding a Net gives the paths conv.conv1.weight, ...")),
    Exercise("20", 3, "Double precision", _double,
             expects="a pair (the record loaded with DoublePrecisionSettings, the largest |difference| of the outputs)",
             hints=("The precision settings decide the record's element type, not the module's.",
                    "Can an f32 value change when it is widened to f64 and narrowed back?")),
    Exercise("20", 4, "A safetensors file by hand", _safetensors,
             expects="a function write_safetensors(path, tensors) that writes {name: float32 array} with NumPy alone",
             hints=("8 bytes of header length (little-endian), the JSON header, then every tensor's bytes.",
                    "Each header entry is {\"dtype\": \"F32\", \"shape\": [...], \"data_offsets\": [begin, end]}, "
                    "offsets counted from the end of the header.")),
]
