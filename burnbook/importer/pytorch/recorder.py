"""`PyTorchFileRecorder` and `LoadArgs`: PyTorch weights into burnbook modules.

As in Burn, a `.pt` file holds weights only, so the architecture is built in
burnbook first and the file supplies its values:

    recorder = PyTorchFileRecorder(FullPrecisionSettings)
    args = LoadArgs("net.pt").with_key_remap(r"conv\\.(.*)", r"\\1")
    record = recorder.load(args, device, model)     # fitted to `model`
    model = model.load_record(record)

Burn picks the record type from the code (`let record: NetRecord<B> = ...`);
Python has no such inference, so the module to fit is passed to `load`.
Without it, `load` returns the file's tensors as a `PyTorchRecord`, which
`record.adapt_to(model)` fits later.

Files may be `torch.save` archives (read by `unpickler`, which never runs
code from the file) or safetensors (`safetensors`); the reader is chosen by
the file's first bytes, not its extension. The recorder only loads: to save
the imported weights, use a burnbook recorder (`model.save_file(path)`).
"""

from __future__ import annotations

import dataclasses
import errno
import os
from pathlib import Path
from typing import Any

import numpy as np

from burnbook.module import Module
from burnbook.record import FullPrecisionSettings, Record, RecordError
from burnbook.record.precision import PrecisionSettings, precision_settings
from ._dtypes import describe
from .record import PyTorchRecord
from .remap import compile_rule, remap_keys
from .safetensors import looks_like_safetensors, read_safetensors
from .unpickler import ZIP_MAGIC, read_pt

__all__ = ["LoadArgs", "PyTorchFileRecorder", "read_tensors"]


@dataclasses.dataclass(frozen=True)
class LoadArgs:
    """What to load and how to rename it (Burn's `LoadArgs`); each `with_`
    method returns a new `LoadArgs`."""

    file: Path
    key_remap: tuple[tuple[str, str], ...] = ()
    top_level_key: str | None = None
    debug: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.file, (str, os.PathLike)):
            raise TypeError(f"LoadArgs: the file must be a path, got {type(self.file).__name__}")
        object.__setattr__(self, "file", Path(self.file))

    @classmethod
    def new(cls, file: str | os.PathLike) -> "LoadArgs":
        """Burn's `LoadArgs::new(file)`; the same as `LoadArgs(file)`."""
        return cls(file)

    def with_key_remap(self, pattern: str, replacement: str) -> "LoadArgs":
        """Rename keys matching the regular expression `pattern` (see
        `remap`: Python `\\1` or Burn `$1` replacements); rules apply in the
        order they were added."""
        compile_rule(pattern, replacement)  # refuse a bad rule here, not at load time
        return dataclasses.replace(self, key_remap=self.key_remap + ((pattern, replacement),))

    def with_top_level_key(self, key: str) -> "LoadArgs":
        """Read the state_dict stored under `key` of a saved dict, as in
        `torch.save({"state_dict": ..., "epoch": 3}, path)`."""
        if not isinstance(key, str):
            raise TypeError(f"with_top_level_key takes a str, got {type(key).__name__}")
        return dataclasses.replace(self, top_level_key=key)

    def with_debug_print(self) -> "LoadArgs":
        """Print every key with its new name, type and shape while loading,
        and the keys a partial module skipped."""
        return dataclasses.replace(self, debug=True)


class PyTorchFileRecorder:
    """Loads PyTorch weights (`.pt` archives, safetensors) as burnbook records.

    Floats are read in the precision settings' type (f32 for
    `FullPrecisionSettings`) whatever the file holds (f16, bf16, f64), then
    converted to the module's own type when it loads the record.
    """

    default_precision: type[PrecisionSettings] = FullPrecisionSettings
    _bound: dict = {}

    def __init__(self, precision: Any = None) -> None:
        self.precision = precision_settings(precision if precision is not None else self.default_precision)

    def __class_getitem__(cls, precision: Any) -> type:
        """`PyTorchFileRecorder[HalfPrecisionSettings]`: the recorder with that default precision."""
        settings = precision_settings(precision)
        if settings not in cls._bound:
            name = f"PyTorchFileRecorder[{settings.__name__}]"
            cls._bound[settings] = type(name, (PyTorchFileRecorder,), {
                "default_precision": settings, "__qualname__": name, "__module__": cls.__module__})
        return cls._bound[settings]

    def __repr__(self) -> str:
        return f"PyTorchFileRecorder[{self.precision.__name__}]()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PyTorchFileRecorder) and other.precision is self.precision

    def __hash__(self) -> int:
        return hash((PyTorchFileRecorder, self.precision))

    def load(self, args: LoadArgs | str | os.PathLike, device: Any = None,
             module: Module | None = None) -> Record | PyTorchRecord:
        """Read the file `args` names (a `LoadArgs` or a path) and apply its key remap.

        With `module`, returns the `Record` that `module.load_record` takes
        (see `PyTorchRecord.adapt_to`); without, the `PyTorchRecord` of the
        file's tensors. `device` is accepted for Burn's signature: records
        are host data, placed on a device when a module loads them.
        """
        if not isinstance(args, LoadArgs):
            args = LoadArgs(args)
        source = os.fspath(args.file)
        tensors = read_tensors(args.file, args.top_level_key)
        rules = [compile_rule(p, r) for p, r in args.key_remap]
        try:
            names = remap_keys(tensors, rules)
        except RecordError as err:
            raise RecordError(f"{source}: {err}") from None
        if args.debug:
            _print_keys(source, tensors, names)
        record = PyTorchRecord({names[k]: v for k, v in tensors.items()}, source, self.precision, args.debug)
        return record if module is None else record.adapt_to(module)


def read_tensors(path: str | os.PathLike, top_level_key: str | None = None) -> dict[str, np.ndarray]:
    """Every tensor of a `.pt` or safetensors file, by name, as NumPy arrays.

    For safetensors, `top_level_key` keeps the keys under that prefix
    (`"model"` keeps `"model.fc.weight"` as `"fc.weight"`).
    """
    source = os.fspath(path)
    try:
        size = os.path.getsize(source)
        with open(source, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"no PyTorch weights file {source}", source) from None
    if head[:4] != ZIP_MAGIC and head[:1] != b"\x80" and looks_like_safetensors(head, size):
        tensors = read_safetensors(source)
        if top_level_key is None:
            return tensors
        prefix = top_level_key + "."
        kept = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
        if not kept:
            raise RecordError(f"{source}: no tensor under the top-level key {top_level_key!r}")
        return kept
    if head[:4] != ZIP_MAGIC and head[:1] != b"\x80":
        raise RecordError(f"{source}: neither a torch.save file nor safetensors (first bytes "
                          f"{head[:8].hex(' ') or 'none: it is empty'})")
    return read_pt(source, top_level_key)


def _print_keys(source: str, tensors: dict[str, np.ndarray], names: dict[str, str]) -> None:
    print(f"{source}: {len(tensors)} tensor(s)")
    width = max((len(k) for k in tensors), default=0)
    for key, array in tensors.items():
        renamed = f" -> {names[key]}" if names[key] != key else ""
        print(f"  {key:<{width}}  {describe(array):<18}{renamed}".rstrip())
