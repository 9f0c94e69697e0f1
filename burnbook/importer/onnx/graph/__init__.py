"""The `graph` stage: an ONNX model read into a `Graph` the later stages work on.

- `values`: `Graph`, `Value`, the element types burnbook tensors hold, `OnnxImportError`;
- `parsing`: the file read (`load_model`), shape inference run and the
  values and constants recorded (`parse`);
- `check`: what is refused before anything else (malformed Einsum equations,
  attributes of the wrong type) and how messages name a node;
- `opset`: models below `MIN_OPSET` upgraded (`upgrade`), Scan's old batch
  axis kept;
- `subgraphs`: If/Loop/Scan bodies typed and walked, and which nodes are live.
"""

from .opset import MIN_OPSET, upgrade
from .parsing import load_model, parse, record_constants
from .values import Graph, OnnxImportError, Value, attrs, elem_info, require_onnx

__all__ = ["Graph", "Value", "OnnxImportError", "MIN_OPSET", "attrs", "elem_info", "require_onnx", "load_model",
           "parse", "record_constants", "upgrade"]
