"""The state the operator emitters share while one graph is translated
(`Lowering`: names bound so far, fields and weights declared, lines
emitted), and the only roads by which text from the ONNX file reaches the
generated source.

Those roads are two: `identifier` (names of fields and variables) and
`quote` (string literals, docstrings included). Nothing else interpolates a
file string, and no file string is ever placed inside a triple-quoted
docstring or a comment; `guard` then checks the finished source before
anything runs or is written. Weights never appear in the source: each layer
or `Param` field is built with placeholder values in `new`, and `weights`
maps its parameter path (`conv1.weight`) to the ONNX values, which
`modelgen` writes as a record.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from burnbook.module import Module

from .graph import Graph, OnnxImportError, Value
from .graph.subgraphs import with_subgraph_nodes


def identifier(name: str, fallback: str = "value") -> str:
    """A valid, lower-case Python identifier made from an ONNX name."""
    text = re.sub(r"[^0-9a-zA-Z_]+", "_", name).strip("_").lower()
    if not text:
        text = fallback
    if text[0].isdigit():
        text = f"{fallback}_{text}"
    if keyword.iskeyword(text) or text in _RESERVED:
        text += "_"
    return text


# names the generated module uses itself; a graph value must not shadow them
_RESERVED = {"self", "cls", "device", "backend", "nn", "activation", "onnx_ops", "input"} | set(dir(builtins))


# a field must not hide a method of Module or of the generated class
_MODULE_NAMES = {n for n in dir(Module) if not n.startswith("_")} | {"new", "from_file", "default", "forward"}


def quote(text: str) -> str:
    """A Python string literal holding `text`, safe anywhere an expression
    or a docstring may stand: `ascii()` escapes every quote, backslash,
    control character, line break (of any kind) and non-ASCII character, so
    the literal is one line of printable ASCII whatever the file held."""
    return ascii(str(text))


def _no_kind(name: str, v: Value) -> OnnxImportError:
    what = v.dtype if str(v.dtype).startswith(("element type", "sequence", "map", "optional")) else f"{v.dtype} elements"
    return OnnxImportError(f"value {name!r} has {what}, which burnbook tensors cannot hold")


def literal(value: Any) -> str:
    """Python source for a number or (nested) list of numbers."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    f = float(value)
    if f != f:
        return 'float("nan")'
    if f in (float("inf"), float("-inf")):
        return 'float("inf")' if f > 0 else '-float("inf")'
    return repr(f)


@dataclass
class FieldDef:
    """One field of the generated class: its name, type and `new` expression."""

    name: str
    annotation: str
    init: str


class Lowering:
    """State shared by the operator emitters while one graph is translated."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.fields: list[FieldDef] = []
        self.weights: dict[str, np.ndarray] = {}
        self.lines: list[str] = []
        self.indent = ""  # a Loop body's lines sit inside its `while` block
        self.names: dict[str, str] = {}
        self._counts: Counter = Counter()
        self._taken: set[str] = set()
        self.consumers: dict[str, list] = {}
        for node in with_subgraph_nodes(graph.nodes):
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        self.fused: set[int] = set()  # ids of nodes another emitter already covered
        # value -> (Python int-list variable, a tensor on the device to build it on): shape
        # arithmetic kept on the host, made a tensor only if a tensor consumer reads it
        self.host: dict[str, tuple[str, str]] = {}

    def only_consumer(self, name: str) -> Any | None:
        """The single node reading `name`, when there is exactly one and
        `name` is not also a graph output (then it may be fused away)."""
        users = self.consumers.get(name, [])
        if len(users) != 1 or name in self.graph.outputs:
            return None
        return users[0]

    # -- values ----------------------------------------------------------------------
    def value(self, name: str) -> Value:
        v = self.graph.values.get(name)
        if v is not None and v.kind is None and v.dtype is not None:
            raise _no_kind(name, v)
        if v is None or v.kind is None or v.rank is None:
            what = "its type" if v is None or v.kind is None else "its rank"
            raise OnnxImportError(f"cannot tell {what} of value {name!r}; run onnx shape inference on the model")
        return v

    def rank(self, name: str) -> int:
        """The ONNX rank of a value (0 for scalars)."""
        return self.value(name).rank

    def brank(self, name: str) -> int:
        """The burnbook rank of a value: scalars are `[1]`."""
        return max(1, self.rank(name))

    def const(self, name: str) -> np.ndarray | None:
        """The constant a value holds, or None (also for an absent input)."""
        if not name:
            return None
        v = self.graph.values.get(name)
        if v is not None and v.const is not None and v.kind is None:
            raise _no_kind(name, v)
        return None if v is None else v.const

    def shape(self, name: str) -> list[int] | None:
        return self.value(name).static_shape()

    def var(self, name: str) -> str:
        """A Python expression for the tensor `name`; a constant becomes a
        `Param` field (recorded with the weights) the first time it is used."""
        if name in self.names:
            return self.names[name]
        if name in self.host:
            ints, like = self.host[name]
            tensor = self.numbered(ints.rstrip("0123456789") + "_t")
            kind = ", Bool" if self.value(name).kind == "Bool" else ""
            self.emit(f"{tensor} = onnx_ops.tensor_like({like}, {ints}{kind})")
            self.names[name] = tensor
            return tensor
        arr = self.const(name)
        if arr is None:
            raise OnnxImportError(f"value {name!r} is used before any node produces it")
        v = self.value(name)
        shape = list(arr.shape) or [1]
        base = identifier(name, "const")
        # a field named like a Module method would hide it on the instance
        field = self.new_name(base + "_" if base in _MODULE_NAMES else base)
        grad = "" if v.kind == "Float" else ", require_grad=False"
        kind = "" if v.kind == "Float" else f", {v.kind}"
        self.add_field(field, "Param", f"Param(Tensor[B, {len(shape)}{kind}].zeros({shape}, device){grad})",
                       {"": arr.reshape(shape)})
        self.names[name] = f"self.{field}.val()"
        return self.names[name]

    def aligned(self, name: str, rank: int) -> str:
        """`var(name)` with leading size-1 dims added up to burnbook rank `rank`
        (NumPy-style broadcasting, which burnbook does between equal ranks)."""
        expr = self.var(name)
        return expr + ".unsqueeze()" * (rank - self.brank(name))

    def ints(self, name: str) -> str:
        """An int-list input as source: a literal when constant, else a
        runtime read-back."""
        arr = self.const(name)
        if arr is not None:
            return literal([int(v) for v in arr.reshape(-1)])
        return self.host[name][0] if name in self.host else f"onnx_ops.ints({self.var(name)})"

    def host_ints(self, name: str) -> str | None:
        """An int value's flat contents as a Python list expression when no
        tensor is needed for it (an integer constant, or shape arithmetic kept
        on the host by `bind_host`), else None."""
        if name in self.host:
            return self.host[name][0] if self.value(name).kind == "Int" else None
        arr = self.const(name)
        if arr is not None and arr.dtype.kind in "iu":
            return literal([int(v) for v in arr.reshape(-1)])
        return None

    def host_list(self, name: str) -> str | None:
        """Like `host_ints`, for Int and Bool values alike (Equal and Where on
        shape values keep their masks on the host too)."""
        if name in self.host:
            return self.host[name][0]
        arr = self.const(name)
        if arr is not None and arr.dtype.kind in "iub":
            return literal([bool(v) if arr.dtype.kind == "b" else int(v) for v in arr.reshape(-1)])
        return None

    def bind_host(self, node: Any, expr: str, like: str, prefix: str) -> None:
        """Emit `name = expr`, a Python list of ints (of bools, for a Bool
        output) holding the node's first output (rank 0 or 1) flattened;
        `like` is a tensor expression whose
        device a tensor of it is built on if some consumer needs one."""
        name = self.numbered(prefix)
        self.emit(f"{name} = {expr}")
        self.host[node.output[0]] = (name, like)

    def host_alias(self, node: Any, name: str) -> None:
        """The node's first output has the flat contents of host value `name`."""
        self.host[node.output[0]] = self.host[name]

    # -- naming and output -------------------------------------------------------------
    def new_name(self, base: str) -> str:
        base = base or "value"
        if base not in self._taken and not base[-1].isdigit():
            self._taken.add(base)
            return base
        return self.numbered(base)

    def numbered(self, base: str) -> str:
        """`base1`, `base2`, ...: Burn's naming of generated layers."""
        while True:
            self._counts[base] += 1
            candidate = f"{base}{self._counts[base]}"
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate

    def bind(self, node: Any, expr: str, prefix: str | None = None) -> str:
        """Emit `name = expr` for the node's first output; returns the name.
        A layer's output is `<layer>_out`, other ops are numbered (`relu3`)."""
        prefix = prefix or identifier(node.op_type, "op")
        name = self.new_name(prefix) if prefix.endswith("_out") else self.numbered(prefix)
        self.emit(f"{name} = {expr}")
        self.names[node.output[0]] = name
        return name

    def bind_many(self, node: Any, expr: str, count: int, prefix: str | None = None) -> None:
        """Emit `a, b = expr` for the node's first `count` outputs (unused
        ones become `_`)."""
        base = self.numbered(prefix or identifier(node.op_type, "op"))
        names = []
        for i in range(count):
            out = node.output[i] if i < len(node.output) else ""
            if out:
                names.append(f"{base}_{i + 1}" if i else base)
                self.names[out] = names[-1]
            else:
                names.append("_")
        self.emit(f"{', '.join(names)} = {expr}")

    def alias(self, node: Any, expr: str) -> None:
        """The node's output is `expr` itself (Identity and friends)."""
        self.names[node.output[0]] = expr

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def add_field(self, name: str, annotation: str, init: str, params: dict[str, np.ndarray]) -> str:
        """Declare a field built by `init` in `new`; `params` maps paths under
        the field ('weight', 'bias', '' for a bare Param) to their values."""
        self.fields.append(FieldDef(name, annotation, init))
        for sub, arr in params.items():
            self.weights[f"{name}.{sub}" if sub else name] = np.asarray(arr)
        return name

    def layer(self, base: str, annotation: str, init: str, params: dict[str, np.ndarray]) -> str:
        name = self.numbered(base)
        self.add_field(name, annotation, init, params)
        return name
