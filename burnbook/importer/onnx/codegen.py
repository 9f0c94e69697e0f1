"""The generated module's source text: the imports its body uses, a
`Module` subclass with its fields, a `new` constructor, `from_file` and
`default` loaders, and the `forward` that `walk` emitted line by line.

Everything from the ONNX file (the graph's name, the file's name, symbolic
dims) goes through `quote`; `guard` checks the result.
"""

from __future__ import annotations

import re

from .graph import Value
from .lowering import Lowering, quote


HEADER = '''"""{doc}"""

from __future__ import annotations

from pathlib import Path
from typing import Any

{imports}
RECORD_NAME = {record}
'''


def _imports(body: str) -> str:
    """Only the imports the generated body uses, sorted as isort would."""
    names = [n for n, pat in (("Bool", r"\bBool\b"), ("Float", r"\bFloat\b"), ("Int", r"\bInt\b"),
                              ("Tensor", r"\bTensor\b"), ("nn", r"\bnn\.")) if re.search(pat, body)]
    lines = [f"from burnbook import {', '.join(names)}"] if names else []
    if "onnx_ops." in body:
        lines.append("from burnbook.importer.onnx import runtime as onnx_ops")
    lines.append("from burnbook.module import Module" + (", Param" if re.search(r"\bParam\b", body) else "")
                 + ", replay_call")
    lines.append("from burnbook.nn.common import resolve_backend")
    lines.append("from burnbook.record import FullPrecisionSettings, NamedMpkFileRecorder")
    if "activation." in body:
        lines.append("from burnbook.tensor import activation")
    if re.search(r"\bF\.", body):
        lines.append("from burnbook.tensor import module as F")
    opts = [n for n in ("ConvOptions", "ConvTransposeOptions") if re.search(rf"\b{n}\(", body)]
    if opts:
        lines.append(f"from burnbook.tensor.ops import {', '.join(opts)}")
    return "\n".join(lines) + "\n"


def module_source(low: Lowering, class_name: str, inputs: list[str], outputs: list[str], doc: str,
                  record_name: str, source: str = "") -> str:
    """The generated module's source text. `doc` (the module docstring) is
    the generator's own text; `source` (the ONNX file's name, from outside
    the program) and everything from the graph go through `quote`."""
    graph = low.graph
    out: list[str] = [f"class {class_name}(Module):"]
    origin = f" of {source}" if source else ""
    out.append(f"    {quote(f'Imported from ONNX graph {graph.name!r}{origin} (opset {graph.opset}).')}")
    out.append("")
    for f in low.fields:
        out.append(f"    {f.name}: {f.annotation}")
    if low.fields:
        out.append("")
    out += ["    _replay = replay_call  # on NdArray, model(x) replays its recorded calls", ""]
    out += [
        "    @classmethod",
        f'    def new(cls, device: Any = None, backend: type | None = None) -> "{class_name}":',
        '        """The model with placeholder weights (Burn\'s `Model::new`); load a',
        '        record to get the imported ones. `backend` defaults to autodiff',
        '        over the device\'s backend, ready to train."""',
        "        B = resolve_backend(device, backend)",
        "        device = device if device is not None else B.default_device()",
    ]
    if low.fields:
        out.append("        return cls(")
        for f in low.fields:
            out.append(f"            {f.name}={f.init},")
        out.append("        )")
    else:
        out.append("        return cls()")
    out += [
        "",
        "    @classmethod",
        "    def from_file(cls, path: Any, device: Any = None, backend: type | None = None) -> "
        f'"{class_name}":',
        '        """The model with the weights of the record at `path` (`.mpk` added)."""',
        "        recorder = NamedMpkFileRecorder(FullPrecisionSettings())",
        "        return cls.new(device, backend).load_record(recorder.load(path))",
        "",
        "    @classmethod",
        f'    def default(cls, device: Any = None, backend: type | None = None) -> "{class_name}":',
        '        """The model with the imported weights, from the record written next',
        '        to this file (Burn\'s `Model::default`)."""',
        "        return cls.from_file(Path(__file__).with_name(RECORD_NAME), device, backend)",
        "",
    ]
    sig = ", ".join(f"{low.names[i]}: Tensor" for i in inputs)
    ret = "Tensor" if len(outputs) == 1 else "tuple"
    out.append(f"    def forward(self{', ' if sig else ''}{sig}) -> {ret}:")
    shapes = ", ".join(f"{low.names[i]} {_shape_text(graph.values[i])}" for i in inputs)
    # dims may be symbolic names from the file, hence quote()
    out.append(f'        {quote(shapes + " -> " + ", ".join(_shape_text(graph.values[o]) for o in outputs) + ".")}'
               if shapes else '        """Computes the graph\'s outputs."""')
    for line in low.lines:
        out.append(f"        {line}")
    results = [low.names[o] if o in low.names else low.var(o) for o in outputs]
    out.append(f"        return {', '.join(results)}" if len(results) > 1 else f"        return {results[0]}")
    body = "\n".join(out) + "\n"
    header = HEADER.format(doc=doc, record=quote(record_name), imports=_imports(body)).lstrip("\n")
    return header + "\n\n" + body


def _shape_text(v: Value) -> str:
    if v.shape is None:
        return "[?]"
    return "[" + ", ".join(str(d) if d is not None else "?" for d in v.shape) + "]"
