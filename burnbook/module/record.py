"""A module's parameters to and from a nested `Record` (Burn's `into_record`
and `load_record`)."""

from __future__ import annotations

from typing import Any

from burnbook.record import ParamRecord, Record, RecordError
from .param import Param, ParamId


def module_to_record(module: Any) -> Record:
    """`{field: sub-record | ParamRecord}`; lists of modules become `{"0": ...}`."""
    return Record(_tree(module))


def _tree(value: Any) -> Any:
    from .base import Module

    if isinstance(value, Param):
        return ParamRecord(value.id.value, value.val().to_data())
    if isinstance(value, Module):
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


def module_from_record(module: Any, record: Any) -> Any:
    """A copy of `module` holding the record's values and ids, after checking
    that names and shapes match; all problems are reported at once. A record
    that must be fitted to the module first (an imported `PyTorchRecord`, in
    PyTorch's names and layouts) does so through its `adapt_to(module)`."""
    adapt = getattr(type(record), "adapt_to", None)
    if adapt is not None:
        record = adapt(record, module)
    if not isinstance(record, Record):
        record = Record(record)
    entries = record.flatten()
    expected = dict(module.named_params())
    problems = []
    missing = [path for path in expected if path not in entries]
    if missing:
        problems.append(f"missing from the record: {', '.join(missing)}")
    unexpected = [path for path in entries if path not in expected]
    if unexpected:
        problems.append(f"not in the module: {', '.join(unexpected)}")
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
    if problems:
        raise RecordError(f"cannot load the record into {type(module).__name__}: " + "; ".join(problems))

    def load(path: str, param: Param) -> Param:
        entry = entries[path]
        tensor = param.val()
        fresh = type(tensor).from_data(entry.data, tensor.device())
        return type(param)(fresh, ParamId(entry.id), param.is_require_grad())

    return module.map_params(load)
