"""Model import: ONNX graphs turned into Python modules, and PyTorch weights
read without executing pickled code.

    from burnbook.importer import ModelGen, PyTorchFileRecorder, LoadArgs

The names load on first use, so `import burnbook.importer` needs neither the
onnx package (only importing an ONNX model does) nor anything PyTorch-side.

- `onnx/`: ONNX import in stages, imports running one way: `graph/` (parsing,
  check, opset, subgraphs), `passes/` (fold, fuse), the operator `table` and
  its families in `ops/` (arithmetic, elementwise, layout, index, shape,
  conv_pool, norm, resampling, products, recurrent, control, loop), `walk`,
  `codegen`, `guard` and `modelgen`; `runtime/` holds the helpers the
  generated modules call;
- `pytorch/`: `.pt` archives read by a restricted unpickler, and safetensors.
"""

from importlib import import_module
from typing import Any

_LAZY = {
    "ModelGen": ".onnx",
    "PyTorchFileRecorder": ".pytorch",
    "LoadArgs": ".pytorch",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'burnbook.importer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
