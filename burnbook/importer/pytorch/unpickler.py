"""Reading `torch.save` files with NumPy alone, without running their code.

A `torch.save` file (PyTorch 1.6 and later) is a zip archive. Its
`<name>/data.pkl` is a pickle of the saved object, usually a state_dict (an
`OrderedDict` from parameter names to tensors); each tensor's values live in
a separate member, `<name>/data/<key>`, as the raw bytes of its storage.

Loading a pickle may call any function the file names, which is how a
malicious checkpoint runs code on the machine that opens it. This reader's
unpickler resolves an allow-list of names and nothing else: the tensor
rebuild functions, the storage types and `collections.OrderedDict`, each
mapped to a NumPy stand-in defined here (torch's own functions are never
imported). Any other name in the file stops the load with `UnsafePickleError`
before anything is called, so a file that would run `os.system` runs nothing.

    tensors = read_pt("net.pt")          # {"conv1.weight": ndarray, ...}

The legacy format (`_use_new_zipfile_serialization=False`) and TorchScript
archives are refused with a message saying how to re-save the file.

A hostile file cannot make the reader hang or run out of memory either:
- every member is read in chunks with a cap known before reading: `data.pkl`
  at most `MAX_PICKLE_BYTES`, a storage exactly the bytes its pickle declares
  (numel x item size; a member larger or smaller is refused), and a
  compressed storage at most 16 times its compressed size (torch.save
  stores members uncompressed, so only a crafted file compresses them);
  all members together inflate to at most 16 times the file's size (at
  least 64 MiB), which also stops entries that share one compressed stream;
- entry names with `..` or an absolute path are refused (nothing is
  extracted, but no such name has an honest use);
- a tensor's offset, sizes and strides must stay inside its storage, and
  all the tensors together may copy at most `_COPY_FACTOR` times the
  storages' elements (a pickle can point a thousand tensors at one storage);
- the saved object is walked with a budget, so shared containers nested
  forty deep (2**40 paths) do not take forever.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from burnbook._inflate import MAX_RATIO, MIN_LIMIT, ratio_limit, read_capped
from burnbook.record import RecordError
from ._dtypes import bf16_bits_to_f32

__all__ = ["read_pt", "UnsafePickleError", "ZIP_MAGIC"]

ZIP_MAGIC = b"PK\x03\x04"
# A zero-stride (expanded) tensor may hold more elements than its storage;
# past this many it is refused rather than materialised.
_MAX_EXPANDED = 1 << 24
# data.pkl holds names and shapes only (about 100 bytes a tensor): 64 MiB is
# half a million tensors, far past any real state_dict.
MAX_PICKLE_BYTES = 64 << 20
# Tensors may share a storage (tied weights, slices of one buffer), but all
# of them together copy at most this many times the storages' elements (plus
# _MAX_EXPANDED for broadcast views).
_COPY_FACTOR = 4
# torch's sizes and strides are int64; no tensor has more dimensions than this.
_MAX_DIMS = 64
# Entries (dict items, list items) visited while flattening the saved object.
_MAX_ENTRIES = 1 << 20
_STORAGE_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class UnsafePickleError(RecordError):
    """A `.pt` file asks the unpickler for something other than tensors,
    storages and ordered dicts; the load stopped before calling it."""


class _StorageType:
    """Stands in for `torch.FloatStorage` and its siblings: the element type."""

    __slots__ = ("name", "dtype", "bf16")

    def __init__(self, name: str, dtype: str, bf16: bool = False) -> None:
        self.name, self.dtype, self.bf16 = name, np.dtype(dtype), bf16

    def __repr__(self) -> str:
        return f"torch.{self.name}"


_STORAGE_TYPES = {t.name: t for t in (
    _StorageType("FloatStorage", "<f4"), _StorageType("DoubleStorage", "<f8"),
    _StorageType("HalfStorage", "<f2"), _StorageType("BFloat16Storage", "<u2", bf16=True),
    _StorageType("LongStorage", "<i8"), _StorageType("IntStorage", "<i4"),
    _StorageType("ShortStorage", "<i2"), _StorageType("CharStorage", "i1"),
    _StorageType("ByteStorage", "u1"), _StorageType("BoolStorage", "?"),
)}


class _CopyBudget:
    """How many elements the rebuilt tensors may still copy out of storages."""

    __slots__ = ("left", "storages")

    def __init__(self) -> None:
        self.left, self.storages = _MAX_EXPANDED, 0

    def add_storage(self, numel: int) -> None:
        self.storages += numel
        self.left += _COPY_FACTOR * numel

    def spend(self, numel: int, size: tuple, key: str) -> None:
        self.left -= numel
        if self.left < 0:
            raise RecordError(
                f"the tensors copy more than {_COPY_FACTOR} times the {self.storages} elements of their "
                f"storages (a tensor of size {list(size)} from data/{key} passed the limit); refused")


class _Storage:
    """One storage member of the archive, as a flat array of its element type."""

    __slots__ = ("words", "type", "key", "budget")

    def __init__(self, words: np.ndarray, type_: _StorageType, key: str, budget: _CopyBudget) -> None:
        self.words, self.type, self.key, self.budget = words, type_, key, budget


class _Tensor:
    """A rebuilt tensor. A slots-only class, so a pickle cannot attach state to it."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array


def _rebuild_tensor_v2(storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any = False, backward_hooks: Any = None, metadata: Any = None) -> _Tensor:
    """torch._utils._rebuild_tensor_v2: a strided view into a storage, copied out."""
    if not isinstance(storage, _Storage):
        raise RecordError(f"a tensor is rebuilt from {type(storage).__name__}, not from a storage")
    if not (_is_int(storage_offset) and storage_offset >= 0):
        raise RecordError(f"invalid storage offset {storage_offset!r:.80}")
    if not (isinstance(size, tuple) and isinstance(stride, tuple) and len(size) == len(stride) <= _MAX_DIMS
            and all(_is_int(n) and 0 <= n < 1 << 63 for n in size)
            and all(_is_int(s) and 0 <= s < 1 << 63 for s in stride)):
        raise RecordError(f"invalid tensor size {size!r:.80} / stride {stride!r:.80}")
    if not storage_offset < 1 << 63:
        raise RecordError(f"invalid storage offset {storage_offset!r:.80}")
    words = storage.words
    native = words.dtype.newbyteorder("=")
    numel = int(np.prod(size, dtype=object)) if size else 1
    if numel == 0:
        array = np.empty(size, dtype=native)
    else:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= len(words):
            raise RecordError(
                f"tensor of size {list(size)}, stride {list(stride)} at offset {storage_offset} reads element "
                f"{last} of storage data/{storage.key}, which holds {len(words)}")
        if numel > len(words) and numel > _MAX_EXPANDED:
            raise RecordError(f"tensor of size {list(size)} expands storage data/{storage.key} "
                              f"({len(words)} elements) to {numel} elements; refused")
        storage.budget.spend(numel, size, storage.key)
        item = words.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            words[storage_offset:], shape=size, strides=[s * item for s in stride], writeable=False)
        array = np.array(view, dtype=native, copy=True)
    if storage.type.bf16:
        array = bf16_bits_to_f32(array)
    return _Tensor(array)


def _rebuild_tensor(storage: Any, storage_offset: Any, size: Any, stride: Any) -> _Tensor:
    """torch._utils._rebuild_tensor (older files)."""
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any, state: Any = None) -> Any:
    """torch._utils._rebuild_parameter(_with_state): an `nn.Parameter` is its tensor here."""
    if not isinstance(data, _Tensor):
        raise RecordError(f"a parameter is rebuilt from {type(data).__name__}, not from a tensor")
    return data


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_GLOBALS: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    **{("torch", name): t for name, t in _STORAGE_TYPES.items()},
}


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only `_GLOBALS`; storages come from the archive members."""

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, byteorder: str,
                 allowance: "_Allowance") -> None:
        super().__init__(io.BytesIO(data))
        self._archive, self._prefix, self._byteorder, self._allowance = archive, prefix, byteorder, allowance
        self._storages: dict[tuple[str, str], _Storage] = {}
        self._budget = _CopyBudget()

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _GLOBALS[(module, name)]
        except (KeyError, TypeError):
            pass
        hint = ""
        module = "builtins" if module == "__builtin__" else module  # protocol 0-2 spelling
        if module.startswith("torch.nn") or module == "__main__":
            hint = (" It looks like a whole pickled model (torch.save(model)): save "
                    "model.state_dict() instead.")
        raise UnsafePickleError(
            f"refused to load the global '{module}.{name}': burnbook reads only tensors, storages and "
            f"ordered dicts from a .pt file and never runs code a file names.{hint}")

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise RecordError(f"unknown persistent id {str(pid)[:80]}")
        _, type_, key, _location, numel = pid
        if not isinstance(type_, _StorageType):
            raise RecordError(f"a storage of type {str(type_)[:80]}, not a storage type")
        if not (isinstance(key, str) and _STORAGE_KEY.fullmatch(key) and key.strip(".")
                and _is_int(numel) and numel >= 0):
            raise RecordError(f"invalid storage reference {str(pid)[:80]}")
        cached = self._storages.get((key, type_.name))
        if cached is not None:
            return cached
        member = f"{self._prefix}/data/{key}"
        try:
            info = self._archive.getinfo(member)
        except KeyError:
            raise RecordError(f"the archive has no member {member} for storage {key!r}") from None
        dtype = type_.dtype if self._byteorder == "little" else type_.dtype.newbyteorder(">")
        need = numel * dtype.itemsize
        if info.file_size < need:
            raise RecordError(f"storage {member} holds {info.file_size} bytes; the pickle expects {need} "
                              f"({numel} x {type_!r})")
        if info.file_size > need:
            raise RecordError(f"storage {member} holds {info.file_size} bytes, more than the {need} the pickle "
                              f"declares ({numel} x {type_!r}); refused")
        if info.compress_type != zipfile.ZIP_STORED and need > ratio_limit(info.compress_size):
            raise RecordError(f"storage {member} inflates {info.compress_size} compressed bytes to {need}, "
                              "a decompression bomb's ratio (torch.save stores storages uncompressed); refused")
        raw = _read_member(self._archive, info, need, self._allowance)
        if len(raw) != need:
            raise RecordError(f"storage {member} inflates to {len(raw)} bytes, not the {need} its header "
                              "and the pickle declare")
        words = np.frombuffer(raw, dtype=dtype, count=numel)
        self._budget.add_storage(numel)
        storage = self._storages[(key, type_.name)] = _Storage(words, type_, key, self._budget)
        return storage


class _Allowance:
    """The bytes all members of one archive may still inflate to."""

    __slots__ = ("left", "total", "size")

    def __init__(self, file_size: int) -> None:
        self.size, self.total = file_size, ratio_limit(file_size)
        self.left = self.total


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, allowance: _Allowance) -> bytearray:
    """The member's bytes, read in chunks and refused past `limit` (its header
    may understate its size) or past what the archive as a whole may inflate to."""
    if info.file_size > limit:
        raise RecordError(f"member {info.filename} inflates to {info.file_size:,} bytes, more than the "
                          f"{limit:,} allowed; refused")
    if info.file_size > allowance.left:
        raise RecordError(f"the members up to {info.filename} inflate to more than {allowance.total:,} bytes, "
                          f"{MAX_RATIO} times the archive's {allowance.size:,} (at least {MIN_LIMIT:,}): "
                          "a decompression bomb; refused")
    with archive.open(info) as stream:
        data = read_capped(stream, min(limit, allowance.left))
    if data is None:
        raise RecordError(f"member {info.filename} inflates past {min(limit, allowance.left):,} bytes; refused")
    allowance.left -= len(data)
    return data


def _check_names(names: list[str]) -> None:
    """Refuse entry names that would escape a folder if extracted."""
    for name in names:
        parts = re.split(r"[/\\]", name)
        if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name) or ".." in parts:
            raise RecordError(f"the archive holds an entry with an unsafe path {name[:120]!r} "
                              "(absolute, or with '..'); refused")


def read_pt(path: str | os.PathLike, top_level_key: str | None = None) -> dict[str, np.ndarray]:
    """The tensors of a `torch.save` file, by dotted name, as NumPy arrays.

    Nested dicts and lists are flattened (`{"model": {"fc.weight": t}}` gives
    `"model.fc.weight"`), values that are not tensors (an epoch number, a
    string) are left out, and bf16 tensors become float32. `top_level_key`
    reads only one entry of a saved dict (e.g. `"state_dict"`). Raises
    `UnsafePickleError` for a pickle naming anything but tensors, and
    `RecordError` naming the file for anything else that is wrong.
    """
    source = os.fspath(path)
    with open(source, "rb") as f:
        head = f.read(4)
    if head != ZIP_MAGIC:
        if head[:1] == b"\x80":
            raise RecordError(
                f"{source}: a legacy torch.save file (the pre-1.6 format, or _use_new_zipfile_serialization=False); "
                "burnbook reads the zip format that torch.save writes by default: load it in PyTorch and "
                "save it again with torch.save(state_dict, path)")
        raise RecordError(f"{source}: not a torch.save file (first bytes {head.hex(' ') or 'none: it is empty'})")
    try:
        with zipfile.ZipFile(source) as archive:
            obj = _unpickle(archive, _Allowance(os.path.getsize(source)))
    except RecordError as err:
        raise type(err)(f"{source}: {err}") from None
    except Exception as err:  # zip, CRC, pickle framing, recursion: all mean a damaged file
        raise RecordError(f"{source}: not a readable torch.save file ({type(err).__name__}: {err})") from err
    if top_level_key is not None:
        if not isinstance(obj, dict) or top_level_key not in obj:
            keys = ", ".join(_key_text(k)[:80] for k in list(obj)[:20]) if isinstance(obj, dict) else (
                f"it holds a {type(obj).__name__}")
            keys += ", ..." if isinstance(obj, dict) and len(obj) > 20 else ""
            raise RecordError(f"{source}: no top-level key {top_level_key!r} ({keys or 'no keys'})")
        obj = obj[top_level_key]
    if isinstance(obj, _Tensor):
        raise RecordError(f"{source}: holds a single tensor, not a dict of named tensors (a state_dict)")
    out: dict[str, np.ndarray] = {}
    try:
        _flatten(obj, "", out, set(), [_MAX_ENTRIES])
    except RecordError as err:
        raise RecordError(f"{source}: {err}") from None
    except RecursionError:
        raise RecordError(f"{source}: the saved object nests too deeply to be a state_dict") from None
    return out


def _unpickle(archive: zipfile.ZipFile, allowance: _Allowance) -> Any:
    names = archive.namelist()
    _check_names(names)
    if any(n.endswith("/constants.pkl") for n in names) and any("/code/" in n for n in names):
        raise RecordError("a TorchScript archive (torch.jit.save); burnbook reads torch.save files: "
                          "save the model's state_dict() with torch.save")
    pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise RecordError(f"a zip archive with {len(pickles)} top-level data.pkl members, not a torch.save file")
    prefix = pickles[0].rsplit("/", 1)[0]
    byteorder = "little"
    if f"{prefix}/byteorder" in names:
        raw = _read_member(archive, archive.getinfo(f"{prefix}/byteorder"), 64, allowance)
        byteorder = raw.decode("ascii", "replace").strip()
        if byteorder not in ("little", "big"):
            raise RecordError(f"unknown byte order {byteorder[:20]!r}")
    info = archive.getinfo(pickles[0])
    if info.file_size > MAX_PICKLE_BYTES:
        raise RecordError(f"{pickles[0]} inflates to {info.file_size:,} bytes; a state_dict's pickle holds "
                          f"names and shapes only, and more than {MAX_PICKLE_BYTES:,} bytes is refused")
    data = _read_member(archive, info, MAX_PICKLE_BYTES, allowance)
    return _RestrictedUnpickler(bytes(data), archive, prefix, byteorder, allowance).load()


def _key_text(key: Any) -> str:
    """`str(key)`, except for an int too long to print (Python refuses past 4,300 digits)."""
    try:
        return str(key)
    except ValueError:
        return f"<an int of {key.bit_length()} bits>"


def _flatten(obj: Any, prefix: str, out: dict[str, np.ndarray], path: set[int], budget: list[int]) -> None:
    if isinstance(obj, _Tensor):
        out[prefix] = obj.array
        return
    if isinstance(obj, dict):
        items: Any = ((_key_text(k), v) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return  # numbers, strings, None: not tensors
    if id(obj) in path:
        raise RecordError(f"the saved object contains itself at {prefix!r}")
    budget[0] -= len(obj) + 1
    if budget[0] < 0:
        raise RecordError(f"the saved object has more than {_MAX_ENTRIES:,} entries (containers shared many "
                          f"times over?), at {prefix[:80]!r}; refused")
    path.add(id(obj))
    for key, value in items:
        if isinstance(value, (_Tensor, dict, list, tuple)):  # anything else holds no tensor
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out, path, budget)
    path.discard(id(obj))
