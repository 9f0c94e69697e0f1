"""PyTorch weight import: `.pt` archives read by a restricted unpickler, and safetensors files.

    from burnbook.importer.pytorch import LoadArgs, PyTorchFileRecorder
    from burnbook.record import FullPrecisionSettings

    args = LoadArgs("net.pt").with_key_remap(r"conv\\.(.*)", r"\\1")
    record = PyTorchFileRecorder(FullPrecisionSettings).load(args, device, model)
    model = model.load_record(record)

Neither reader imports torch: `unpickler` rebuilds tensors with NumPy and
refuses any other object a pickle names (`UnsafePickleError`), `safetensors`
parses the header and buffers itself, `adapter` fits PyTorch names and
layouts to a burnbook module, and `recorder` ties them together.
"""

from .adapter import LAYER_RULES, LayerRule
from .record import PyTorchRecord
from .recorder import LoadArgs, PyTorchFileRecorder, read_tensors
from .safetensors import read_safetensors
from .unpickler import UnsafePickleError, read_pt

__all__ = [
    "PyTorchFileRecorder", "LoadArgs", "PyTorchRecord", "UnsafePickleError",
    "read_tensors", "read_pt", "read_safetensors", "LayerRule", "LAYER_RULES",
]
