"""The operator table: for each supported ONNX operator, a check (what of
its attributes and inputs the importer can translate) and an emitter (the
Python line(s) it becomes). The emitters live by family in `ops_math`,
`ops_nn` and `ops_layout`, which register themselves here with `@op`; this
module holds the table, the helpers they share, and the walk over a graph.

Emitters prefer what a person would write with burnbook: a layer field
(`nn.Conv2d`, `nn.Linear`, `nn.BatchNorm`, ...) when the weights are
constants, a Tensor method or an `activation`/`F` function otherwise, and a
`runtime` helper (imported as `onnx_ops`) only for ONNX rules that have no
one-call equivalent. `check_graph` runs every check before anything is
generated, so one error names every problem of a model.
"""

from __future__ import annotations

from typing import Any, Callable

from .codegen import Lowering, literal
from .graph import Graph, OnnxImportError, attrs

Emitter = Callable[[Lowering, Any, dict], None]
Checker = Callable[[Graph, Any, dict], "list[str]"]

TABLE: dict[str, tuple[Emitter, Checker | None]] = {}


def op(*names: str, check: Checker | None = None) -> Callable[[Emitter], Emitter]:
    def register(fn: Emitter) -> Emitter:
        for name in names:
            TABLE[name] = (fn, check)
        return fn

    return register


def supported_ops() -> list[str]:
    """The ONNX operators the importer translates, sorted."""
    _register_all()
    return sorted(TABLE)


def inp(node: Any, i: int) -> str:
    """The name of input `i`, or "" when it is absent."""
    return node.input[i] if len(node.input) > i else ""


def literal_list(text: str) -> list[int]:
    """The ints of a list literal written by `literal`."""
    return [int(v) for v in text.strip("[]").split(",") if v.strip()]


def axes_source(axes: list[int] | str | None) -> str:
    """`axes_of`'s answer as source text."""
    return literal(axes) if isinstance(axes, list) else ("None" if axes is None else axes)


def axes_of(low: Lowering, node: Any, a: dict) -> list[int] | str | None:
    """The `axes` of Squeeze/Unsqueeze/Reduce*, from the attribute (old
    opsets) or the input: a list when known now, the source of a run-time
    read-back otherwise, None when absent."""
    if "axes" in a:
        return [int(v) for v in a["axes"]]
    name = inp(node, 1)
    if not name:
        return None
    const = low.const(name)
    return [int(v) for v in const.reshape(-1)] if const is not None else low.ints(name)


def settle_reduced_rank(low: Lowering, node: Any, keep: bool) -> None:
    """Give a reduction's output its rank where shape inference left it open
    (axes read at run time): the number of axes fixes it."""
    out = low.graph.values.get(node.output[0])
    if out is not None and out.rank is None:
        rank = low.rank(node.input[0])
        n_axes = (low.shape(inp(node, 1)) or [rank])[0] if inp(node, 1) else rank
        out.rank = rank if keep else rank - (n_axes or rank)


# -- the walk ---------------------------------------------------------------------------
def check_graph(graph: Graph, refused: list | None = None) -> list[str]:
    """Every reason the graph cannot be translated (empty when it can); the
    nodes at fault are appended to `refused` when given."""
    _register_all()
    problems: list[str] = []
    missing: dict[str, list] = {}
    refused = [] if refused is None else refused
    for node in graph.nodes:
        if node.domain not in ("", "ai.onnx"):
            missing.setdefault(_printable(f"{node.domain}.{node.op_type}"), []).append(node)
            refused.append(node)
            continue
        entry = TABLE.get(node.op_type)
        if entry is None:
            missing.setdefault(_printable(node.op_type), []).append(node)
            refused.append(node)
            continue
        wrong_types = _attribute_type_problems(node, graph.opset)
        checker = entry[1]
        found = wrong_types or (checker(graph, node, attrs(node)) if checker is not None else [])
        refused += [node] if found else []
        for p in found:
            problems.append(f"node {node_label(node)} ({_printable(node.op_type)}): {p}")
    for name in graph.inputs + graph.outputs:
        v = graph.values.get(name)
        if v is None or v.kind is None:
            what = v.dtype if v is not None else "an unknown type"
            problems.append(f"graph value {name!r} has {what}, which burnbook tensors cannot hold")
    if missing:
        listed = ", ".join(f"{k} ({_node_names(nodes)})" for k, nodes in sorted(missing.items()))
        problems.insert(0, f"unsupported operators: {listed}")
    return problems


def _node_names(nodes: list, shown: int = 3) -> str:
    """`node 'a'` or `x3: nodes 'a', 'b', 'c'`, at most `shown` names then a count."""
    names = ", ".join(node_label(n) for n in nodes[:shown])
    more = f" and {len(nodes) - shown} more" if len(nodes) > shown else ""
    return f"node {names}" if len(nodes) == 1 else f"x{len(nodes)}: nodes {names}{more}"


def node_label(node: Any) -> str:
    """How messages name a node: its name, else its first output, quoted."""
    return repr(node.name or (node.output[0] if len(node.output) else f"<{node.op_type} without outputs>"))


def _printable(text: str) -> str:
    """`text` as it is when it is plain printable ASCII, else escaped, so a
    name from the file cannot break up or recolour an error message."""
    return text if text.isascii() and text.isprintable() else ascii(text)


def _attribute_type_problems(node: Any, opset: int) -> list[str]:
    """Attributes whose type is not the one the operator's ONNX schema
    declares (a string where an int belongs, say): the emitters read each
    attribute as its declared type and never see such a value."""
    from onnx import AttributeProto, defs

    try:
        schema = defs.get_schema(node.op_type, opset, "")
    except Exception:  # no schema at this opset: the emitter's own checks decide
        return []
    problems = []
    for a in node.attribute:
        declared = schema.attributes.get(a.name)
        if declared is not None and int(a.type) != int(declared.type):
            got = AttributeProto.AttributeType.Name(a.type)
            problems.append(f"attribute {a.name!r} is {got}, the ONNX spec of {node.op_type} says "
                            f"{declared.type.name}")
    return problems


def _register_all() -> None:
    """Import the operator families, whose `@op` decorators fill TABLE."""
    from . import ops_layout, ops_math, ops_nn  # noqa: F401
    from . import ops_elementwise  # noqa: F401  (unary math, logic, bitwise, variadic)
    from . import ops_index  # noqa: F401  (reductions, arg/top-k, gather/scatter, one-hot)
    from . import ops_shape  # noqa: F401  (expand, tile, pad, split, range, generators)
    from . import ops_norm  # noqa: F401  (normalisations, pooling, resize, attention)
    from . import ops_recurrent  # noqa: F401  (LSTM, GRU, RNN, If, Loop, Scan)


def _live_nodes(graph: Graph) -> set[int]:
    """Ids of the nodes whose outputs something reads: a graph output, a live
    node, or a subgraph (If/Loop/Scan body). The rest are not emitted: an
    exporter's `Shape` that folding left unused would otherwise run on every
    forward."""
    from .codegen import _with_subgraph_nodes

    needed = set(graph.outputs)
    for node in graph.nodes:
        for attr in node.attribute:
            if attr.HasField("g") or len(attr.graphs):
                bodies = [attr.g] if attr.HasField("g") else list(attr.graphs)
                for body in bodies:
                    needed.update(n for inner in _with_subgraph_nodes(list(body.node)) for n in inner.input)
    return live_ids(graph.nodes, needed)


def live_ids(nodes: list, needed: set) -> set[int]:
    """Ids of `nodes` (in order) whose outputs `needed` holds or a live node
    after them reads, with what their subgraphs read; `needed` grows."""
    from .codegen import _with_subgraph_nodes

    live: set[int] = set()
    for node in reversed(nodes):
        if any(o and o in needed for o in node.output):
            live.add(id(node))
            needed.update(n for sub in _with_subgraph_nodes([node]) for n in sub.input if n)
    return live


# Int tensors hold every ONNX integer type as i64, so these operators can leave
# a narrower output type's range; onnxruntime's kernels then wrap in two's
# complement (int8 127 + 1 is -128, uint8 0 - 1 is 255, int32 CumSum and Einsum
# too, and MatMul; Neg and Abs of int8 -128 are -128, as in NumPy and PyTorch) ...
_WRAPPING = frozenset({"Add", "Sub", "Mul", "Sum", "CumSum", "Einsum", "MatMul", "Neg", "Abs"})
# ... but its int32 reductions compute exactly and saturate at the bounds
# (ReduceSum of [2**31 - 1, 1] is 2**31 - 1).
_SATURATING = frozenset({"ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceL1"})
# Of those, these can pass i64's range before the clamp ((-2**31)**3 wraps to
# 0): the same reduction in floats decides which results saturate.
_PAST_I64 = frozenset({"ReduceProd", "ReduceSumSquare"})
_NARROW_INTS = {"int8": (-2 ** 7, 8), "int16": (-2 ** 15, 16), "int32": (-2 ** 31, 32),
                "uint8": (0, 8), "uint16": (0, 16), "uint32": (0, 32)}


def narrow_int_result(low: Lowering, node: Any) -> None:
    """After `node`'s emitter: when its output's ONNX type is an integer type
    narrower than 64 bits and the operator can leave that range, bring the
    i64 result back into it as onnxruntime does. Float and int64 outputs get
    no extra line."""
    wraps = node.op_type in _WRAPPING
    if not (wraps or node.op_type in _SATURATING) or not node.output:
        return
    out = low.graph.values.get(node.output[0])
    lo_bits = _NARROW_INTS.get(out.dtype) if out is not None and out.kind == "Int" else None
    if lo_bits is None:
        return
    lo, bits = lo_bits
    if node.output[0] in low.host:  # shape arithmetic on the host: a fresh list, as aliases may share one
        values, like = low.host[node.output[0]]
        name = low.numbered(values.rstrip("0123456789") + "_wrapped")
        low.emit(f"{name} = onnx_ops.wrap_ints({values}, {lo}, {bits})")
        low.host[node.output[0]] = (name, like)
        return
    name = low.names.get(node.output[0])
    # an alias of an input (Sum of one value, a no-op reduction) is in range already
    if name is None or not name.isidentifier() or name in {low.names.get(i) for i in node.input}:
        return
    if node.op_type in _PAST_I64:
        from .ops_index import reduce_ext_call  # ops_index imports this module

        approx = reduce_ext_call(low, node, f"{low.var(node.input[0])}.float()")
        expr = f"onnx_ops.saturate_reduction({name}, {approx}, {lo}, {lo + 2 ** bits - 1})"
    elif not wraps:
        expr = f"{name}.clamp({lo}, {lo + 2 ** bits - 1})"
    elif lo == 0:
        expr = f"{name}.remainder_scalar({2 ** bits})"
    else:  # ((v - lo) mod 2**bits) + lo, with `remainder`'s non-negative result
        expr = f"({name} + {-lo}).remainder_scalar({2 ** bits}) - {-lo}"
    low.emit(f"{name} = {expr}")


def emit_node(low: Lowering, node: Any) -> None:
    """Run `node`'s emitter, then keep a narrow integer result in its type."""
    TABLE[node.op_type][0](low, node, attrs(node))
    narrow_int_result(low, node)


def lower(graph: Graph, origin: str = "this ONNX model") -> Lowering:
    """Translate every node; raises OnnxImportError listing all problems,
    naming `origin` (the file) and the opset, with any re-export advice."""
    from .fold import reexport_hints

    refused: list = []
    problems = check_graph(graph, refused)
    where = f"{_printable(origin)} (opset {graph.opset})"
    if problems:
        hints = "".join(f"\nhint: {h}" for h in reexport_hints(graph, refused))
        raise OnnxImportError(f"cannot import {where}:\n  - " + "\n  - ".join(problems) + hints
                              + f"\nsupported operators: {', '.join(supported_ops())}")
    low = Lowering(graph)
    from .codegen import identifier

    for name in graph.inputs:
        low.names[name] = low.new_name(identifier(name, "input"))
    live = _live_nodes(graph)
    for node in graph.nodes:
        if id(node) in low.fused or id(node) not in live:
            continue
        try:
            emit_node(low, node)
        except Exception as err:
            why = err if isinstance(err, OnnxImportError) else f"cannot translate it: {err}"
            hints = "".join(f"\nhint: {h}" for h in reexport_hints(graph, [node]))
            raise OnnxImportError(
                f"cannot import {where}: node {node_label(node)} ({_printable(node.op_type)}): {why}{hints}") from err
    for name in graph.outputs:
        if name not in low.names:
            low.var(name)
    return low
