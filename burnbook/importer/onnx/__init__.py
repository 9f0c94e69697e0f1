"""ONNX import: `ModelGen` parses an ONNX file and writes a Python module plus a record of its weights.

    from burnbook.importer import ModelGen
    ModelGen().input("mnist.onnx").out_dir("model/").run()   # model/mnist.py + model/mnist.mpk

`build_model(path)` gives the same model in memory. Modules: `graph` (parse,
opset, value info), `fold` (constant folding at import: exporters' shape
arithmetic on fixed dims becomes constants), `fuse` (pattern fusion at import:
exporters' multi-node GELU formulas become one `Gelu` node), `ops` (the operator table and
the walk over a graph; its emitters by family in `ops_math`, `ops_nn`,
`ops_layout`), `codegen` (the source writer), `guard` (the allowlist every generated module passes
before it runs or is written), `modelgen` (the builder), `runtime` (the
helpers generated code calls).
"""

from .graph import MIN_OPSET, OnnxImportError
from .modelgen import GeneratedModel, ModelGen, build_model, generate
from .ops import supported_ops

__all__ = ["ModelGen", "GeneratedModel", "build_model", "generate", "supported_ops", "OnnxImportError", "MIN_OPSET"]
