"""ONNX import: `ModelGen` parses an ONNX file and writes a Python module plus a record of its weights.

    from burnbook.importer import ModelGen
    ModelGen().input("mnist.onnx").out_dir("model/").run()   # model/mnist.py + model/mnist.mpk

`build_model(path)` gives the same model in memory. A call of a generated
model goes through `burnbook.module.replay_call` and computes quietly, as
onnxruntime does: the ±inf/NaN lanes an exported graph makes by
construction (masked softmax rows, log(0) masks, T5's buckets) raise no
NumPy warning there, while the user's own tensor ops keep theirs
(`burnbook/module/replay.py` says the rule). The import runs in
stages; imports run one way, from the top of this list down:

- `modelgen` (the builder), `codegen` (the generated module's source text),
  `guard` (the allowlist every generated module passes before it runs or
  is written);
- `walk`: every node checked against the operator table, then every live
  node emitted; it imports `ops`, which fills the table;
- `ops/`: the emitters, one module per operator family: `arithmetic`,
  `elementwise`, `layout`, `index`, `shape`, `conv_pool`, `norm`,
  `resampling`, `products`, `recurrent`, `control` (If, Scan), `loop`;
- `passes/`: rewrites before lowering: `fold` (constant folding) and `fuse`
  (GELU chains become one `Gelu` node);
- `emit` (one node's emitter, then narrow integer results kept in range),
  `args` (a node's inputs and attributes), `table` (the operator table the
  families register into), `lowering` (the emitters' state, and the only
  roads from file text into source);
- `runtime/`: the helpers generated code calls, imported there as
  `onnx_ops` (by family: `host`, `layout`, `elementwise`, `cast`,
  `reductions`, `index`, `shapes`, `pooling`, `norm`, `resampling`,
  `products`, `recurrence`, `control`);
- `graph/`: reading a model: `parsing`, `check`, `opset`, `subgraphs`,
  `values` (`Graph`, `Value`, `OnnxImportError`).
"""

from .graph import MIN_OPSET, OnnxImportError
from .modelgen import GeneratedModel, ModelGen, build_model, generate
from .walk import supported_ops

__all__ = ["ModelGen", "GeneratedModel", "build_model", "generate", "supported_ops", "OnnxImportError", "MIN_OPSET"]
