"""A module's parameters to and from a nested `Record` (Burn's `into_record`
and `load_record`), and the file shortcuts `save_file`/`load_file`.

`Recordable` holds these methods and `Module` inherits them, so this file
sits below `module/base.py` and never imports it: a module is recognised
here as a `Recordable` (`Module` is its one subclass).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from burnbook.record import DefaultFileRecorder, ParamRecord, Record, RecordError
from burnbook.record.base import dtype_name, tensor_equal
from .param import Param, ParamId


class Recordable:
    """The record methods of `Module` (its base class)."""

    def into_record(self) -> Record:
        """The parameters as a nested `Record` (`record.conv1.weight`)."""
        return module_to_record(self)

    def load_record(self, record: Any, allow_lossy: bool = False) -> Any:
        """A new module holding the record's values; every missing, unexpected,
        mis-shaped or mis-typed entry is named in one `RecordError`. A value
        that would change on conversion to the parameter's element type (an
        f64 beyond the f32 range, bool into float, a fraction into an Int) is
        refused unless `allow_lossy=True`; rounding f64 to f32 is accepted."""
        return module_from_record(self, record, allow_lossy)

    def save_file(self, path: Any, recorder: Any = None) -> Any:
        """Save the record with `recorder` (default: `DefaultFileRecorder`,
        named MessagePack `.mpk`, full precision); the recorder adds the file
        extension. Returns the path written."""
        recorder = recorder if recorder is not None else DefaultFileRecorder()
        return recorder.record(self.into_record(), path)

    def load_file(self, path: Any, recorder: Any = None, device: Any = None, allow_lossy: bool = False) -> Any:
        """`load_record` of the file saved by `recorder` (default:
        `DefaultFileRecorder`), moved to `device` if given."""
        recorder = recorder if recorder is not None else DefaultFileRecorder()
        module = self.load_record(recorder.load(path), allow_lossy=allow_lossy)
        return module if device is None else module.to_device(device)


def module_to_record(module: Any) -> Record:
    """`{field: sub-record | ParamRecord}`; lists of modules become `{"0": ...}`."""
    return Record(_tree(module))


def _tree(value: Any) -> Any:
    if isinstance(value, Param):
        return ParamRecord(value.id.value, value.val().to_data())
    if isinstance(value, Recordable):
        out = {}
        for name, child in value.children():
            sub = _tree(child)
            if sub is not None:
                out[name] = sub
        return out
    if isinstance(value, (list, tuple)):
        items = {str(i): _tree(v) for i, v in enumerate(value)}
        items = {k: v for k, v in items.items() if v is not None}
        return items or None
    return None


def module_from_record(module: Any, record: Any, allow_lossy: bool = False) -> Any:
    """A copy of `module` holding the record's values and ids, after checking
    that names, shapes and element types fit; all problems are reported at
    once. A record that must be fitted to the module first (an imported
    `PyTorchRecord`, in PyTorch's names and layouts) does so through its
    `adapt_to(module)`.

    A value that would change on conversion to the module's element type
    (an f64 beyond the f32 range, a float with a fraction into an Int
    parameter, bool into float) is refused unless `allow_lossy`; rounding
    f64 to f32 within range is always accepted. Two different parameters of
    the module never end up sharing an id: a record id met a second time
    (the same entry loaded at two paths) gets a fresh one.
    """
    adapt = getattr(type(record), "adapt_to", None)
    if adapt is not None:
        record = adapt(record, module)
    where = f"cannot load the record into {type(module).__name__}"
    if not isinstance(record, Mapping):
        raise RecordError(f"{where}: the record holds a {type(record).__name__} value where a map of field "
                          "names belongs (a module's record maps each field to a sub-record or a parameter)")
    if not isinstance(record, Record):
        try:
            record = Record(record)
        except TypeError as err:
            raise RecordError(f"{where}: {err}") from None
    entries = record.flatten()
    expected: dict[str, Param] = dict(module.named_params())
    problems = []
    missing = [path for path in expected if path not in entries]
    if missing:
        problems.append(f"missing from the record: {', '.join(missing)}")
    unexpected = [path for path in entries if path not in expected]
    if unexpected:
        problems.append(f"not in the module: {', '.join(unexpected)}")
    first_path: dict[int, str] = {}  # Param object -> the first path it sits at (tied parameters)
    for path, param in expected.items():
        entry = entries.get(path)
        if entry is None:
            continue
        if not isinstance(entry, ParamRecord):
            problems.append(f"{path}: expected a parameter, found {type(entry).__name__}")
            continue
        want = param.val().dims()
        if list(entry.shape) != want:
            problems.append(f"{path}: shape {list(entry.shape)} in the record, {want} in the module")
            continue
        problem = _dtype_problem(entry.data.array, param.val().dtype.np, allow_lossy)
        if problem:
            problems.append(f"{path}: {problem}")
            continue
        tied = first_path.setdefault(id(param), path)
        if tied != path:
            other = entries.get(tied)
            if isinstance(other, ParamRecord) and not tensor_equal(other.data, entry.data):
                problems.append(f"{path}: tied to '{tied}' in the module (one Param at both paths), but the "
                                "record holds different values for the two")
    if problems:
        raise RecordError(f"{where}: " + "; ".join(problems))

    taken: set[str] = set()

    def load(path: str, param: Param) -> Param:
        # Called once per distinct Param (tied parameters share the result).
        entry = entries[path]
        tensor = param.val()
        fresh = type(tensor).from_data(entry.data, tensor.device())
        ident = ParamId(entry.id) if entry.id not in taken else ParamId()
        taken.add(ident.value)
        return type(param)(fresh, ident, param.is_require_grad())

    return module.map_params(load)


def _dtype_problem(array: np.ndarray, target: np.dtype, allow_lossy: bool) -> str | None:
    """Why converting `array` to `target` would lose information, or None.
    Float narrowing within range (f64 -> f32 rounding) is not a loss."""
    src = array.dtype
    if src == target:
        return None
    names = f"{_name(src)} in the record, {_name(target)} in the module"
    if (src.kind == "b") != (target.kind == "b"):
        if allow_lossy:
            return None
        return f"{names}: bool and numbers do not mix; pass allow_lossy=True to convert anyway"
    if allow_lossy or src.kind == "b":
        return None
    with np.errstate(all="ignore"):
        converted = array.astype(target)
        if target.kind == "f" and src.kind == "f":  # rounding is expected; overflow to infinity is not
            bad = np.isinf(converted) & np.isfinite(array)
        elif target.kind == "f":  # integers must be exact in the float type
            bad = converted.astype(src) != array
        elif src.kind == "f":
            bad = ~np.isfinite(array) | (array != np.trunc(array)) | (converted.astype(src) != array)
        else:  # integer to integer: compare the range as Python ints (no wrap-around)
            info = np.iinfo(target)
            bad = np.zeros(array.shape, bool)
            if array.size and (int(array.max()) > info.max or int(array.min()) < info.min):
                exact = array.astype(object)
                bad = ((exact > info.max) | (exact < info.min)).astype(bool)
    count = int(np.count_nonzero(bad))
    if not count:
        return None
    example = array.reshape(-1)[int(np.flatnonzero(bad.reshape(-1))[0])].item()
    return (f"{names}: {count} value(s) would change on conversion (e.g. {example!r}); "
            "pass allow_lossy=True to convert anyway")


def _name(dtype: np.dtype) -> str:
    try:
        return dtype_name(dtype)
    except TypeError:
        return str(dtype)
