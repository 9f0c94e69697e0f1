"""Fitting PyTorch tensors to a burnbook module (Burn's `PyTorchAdapter`).

Most layers store their parameters under the same names and in the same
layouts in both frameworks (convolutions, embeddings). A few differ, and
their rules are in `LAYER_RULES`:

| burnbook layer        | PyTorch                     | what changes                       |
| --------------------- | --------------------------- | ---------------------------------- |
| `Linear`              | `nn.Linear`                 | weight `[out, in]` is transposed to `[in, out]` |
| `BatchNorm`           | `nn.BatchNorm1d/2d/3d`      | `weight`/`bias` are `gamma`/`beta`; `num_batches_tracked` is dropped |
| `LayerNorm`, `GroupNorm` | `nn.LayerNorm`, `nn.GroupNorm` | `weight`/`bias` are `gamma`/`beta` |
| `PRelu`               | `nn.PReLU`                  | `weight` is `alpha`                |

Only the module knows which 2-D tensor is a Linear weight (an Embedding's
is not transposed, and a square one would fit either way), so adaptation
walks the module. A file key whose parent the module has (a layer or a
list the module defines) must be used; keys of sub-modules the module does
not define are skipped, which is how a partial model (an encoder alone)
loads from the file of a whole network, as in Burn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from burnbook import nn
from burnbook.module import Module, Param
from burnbook.record import ParamRecord, Record, RecordError
from burnbook.record.precision import PrecisionSettings
from burnbook.tensor import Float
from ._dtypes import describe

__all__ = ["LayerRule", "LAYER_RULES", "adapt", "Adapted"]


@dataclass(frozen=True)
class LayerRule:
    """How one kind of layer's parameters are named and laid out in PyTorch."""

    names: Mapping[str, str] = field(default_factory=dict)   # burnbook field -> PyTorch name
    transpose: frozenset = frozenset()                       # burnbook fields stored transposed
    ignore: frozenset = frozenset()                          # PyTorch names the layer has no use for


_NORM = LayerRule(names={"gamma": "weight", "beta": "bias"})
LAYER_RULES: list[tuple[type, LayerRule]] = [
    (nn.Linear, LayerRule(transpose=frozenset({"weight"}))),
    (nn.BatchNorm, LayerRule(names=_NORM.names, ignore=frozenset({"num_batches_tracked"}))),
    (nn.LayerNorm, _NORM),
    (nn.GroupNorm, _NORM),
    (nn.PRelu, LayerRule(names={"alpha": "weight"})),
]
_PLAIN = LayerRule()


@dataclass
class _Slot:
    path: str            # burnbook path, "fc.weight"
    key: str             # PyTorch key, "fc.weight"
    param: Param
    transpose: bool


@dataclass
class Adapted:
    """The record for the module, and the file keys it did not use."""

    record: Record
    skipped: list[str]


def _rule(module: Module) -> LayerRule:
    for cls, rule in LAYER_RULES:
        if isinstance(module, cls):
            return rule
    return _PLAIN


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _walk(value: Any, path: str, slots: list[_Slot], scopes: dict[str, Any]) -> None:
    """Collect every parameter slot, and every path a key's parent may name."""
    if isinstance(value, Module):
        scopes[path] = value
        rule = _rule(value)
        for name, child in value.children():
            if isinstance(child, Param):
                slots.append(_Slot(_join(path, name), _join(path, rule.names.get(name, name)), child,
                                   name in rule.transpose))
            else:
                _walk(child, _join(path, name), slots, scopes)
    elif isinstance(value, (list, tuple)) and any(isinstance(v, (Module, Param)) for v in value):
        scopes[path] = value
        for i, item in enumerate(value):
            if isinstance(item, Param):
                slots.append(_Slot(_join(path, str(i)), _join(path, str(i)), item, False))
            else:
                _walk(item, _join(path, str(i)), slots, scopes)


def adapt(tensors: Mapping[str, np.ndarray], module: Module, precision: type[PrecisionSettings],
          source: str) -> Adapted:
    """The record `module.load_record` takes, built from `tensors` (PyTorch
    names, after any key remap, in PyTorch layouts).

    Float tensors are stored in `precision`'s float type (f16 for half
    precision), whatever type the file holds; the module converts them to
    its own on loading. Every missing, unexpected or mis-shaped tensor is
    named in one `RecordError`, with the file `source`.
    """
    if not isinstance(module, Module):
        raise TypeError(f"adapt: expected a burnbook Module, got {type(module).__name__}")
    slots: list[_Slot] = []
    scopes: dict[str, Any] = {}
    _walk(module, "", slots, scopes)

    used: set[str] = set()
    flat: dict[str, ParamRecord] = {}
    missing, shapes = [], []
    for slot in slots:
        array = tensors.get(slot.key)
        if array is None:
            missing.append(slot.path if slot.key == slot.path else f"{slot.path} (PyTorch name '{slot.key}')")
            continue
        used.add(slot.key)
        problem, fitted = _fit(slot, array, precision)
        if problem:
            shapes.append(problem)
        else:
            flat[slot.path] = ParamRecord(slot.param.id.value, fitted)

    unexpected, skipped = [], []
    for key in tensors:
        if key in used:
            continue
        parent, _, leaf = key.rpartition(".")
        owner = scopes.get(parent)
        if owner is None:
            skipped.append(key)
        elif not (isinstance(owner, Module) and leaf in _rule(owner).ignore):
            unexpected.append(_unexpected(key, owner, leaf))

    problems = []
    if missing:
        problems.append("missing from the file: " + ", ".join(missing))
    if unexpected:
        problems.append("in the file but not in the module: " + "; ".join(unexpected))
    problems.extend(shapes)
    if problems:
        if missing and skipped:
            shown = ", ".join(skipped[:8]) + (f" and {len(skipped) - 8} more" if len(skipped) > 8 else "")
            problems.append(f"file keys that no parameter used: {shown} (LoadArgs.with_key_remap renames keys)")
        raise RecordError(f"cannot load {source} into {type(module).__name__}:\n  " + "\n  ".join(problems))
    return Adapted(_nest(flat), skipped)


def _fit(slot: _Slot, array: np.ndarray, precision: type[PrecisionSettings]) -> tuple[str, np.ndarray]:
    """(problem, array in burnbook's layout and the record's element type)."""
    tensor = slot.param.val()
    want = tensor.dims()
    fitted = array
    layout = ""
    if slot.transpose:
        if array.ndim != 2:
            return f"{slot.path}: the file has {describe(array)}, a Linear weight must be 2-D", array
        fitted = array.T
        layout = f" (PyTorch's [out, in]; {list(fitted.shape)} once transposed to burnbook's [in, out])"
    if list(fitted.shape) != want:
        return f"{slot.path}: the file has {describe(array)}{layout}, the module {want}", array
    if tensor._K is Float:
        dtype = precision.float_dtype
    else:
        dtype = tensor._K.default_dtype
        if array.dtype.kind == "f":
            return f"{slot.path}: the file has float values ({describe(array)}) for a {tensor._K.__name__} tensor", array
    return "", np.ascontiguousarray(fitted, dtype=dtype)


def _unexpected(key: str, owner: Any, leaf: str) -> str:
    if isinstance(owner, Module):
        kind = type(owner).__name__
        return f"{key} (the module's {kind} at '{key.rpartition('.')[0] or '<root>'}' has no parameter '{leaf}')"
    return f"{key} (the list has {len(owner)} items)"


def _nest(flat: Mapping[str, ParamRecord]) -> Record:
    tree: dict[str, Any] = {}
    for path, entry in flat.items():
        *parents, leaf = path.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = entry
    return Record(tree)
