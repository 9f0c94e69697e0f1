"""ONNX LSTM, GRU and RNN through the importer, against onnxruntime.

The onnx package's own node cases cover the general recurrence (weights
fed as inputs); here the same cases run with their weights as initializers,
which the importer turns into burnbook's `nn.Lstm`/`nn.Gru` layers, then
PyTorch's exports of `nn.LSTM`/`nn.GRU` classifiers (the TorchScript
exporter live, the dynamo exporter's files from
tools/make_recurrent_onnx.py), then what neither covers (sequence_lens,
layout 1, clip, other activations) and the refusals; last, the control
flow of `ops/control` (If, unrolled Scan).
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook import Bool, Float, Int, Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model  # noqa: E402
from burnbook.importer.onnx.modelgen import generate  # noqa: E402

ASSETS = Path(__file__).resolve().parent / "assets" / "recurrent"
TOL = 1e-4


def _tensor(array: np.ndarray) -> Tensor:
    """A burnbook tensor of `array` (an ONNX scalar is `[1]`)."""
    kind = Bool if array.dtype == np.bool_ else Int if array.dtype.kind in "iu" else Float
    array = array.reshape(1) if array.ndim == 0 else array
    return Tensor[NdArray, array.ndim, kind].from_data(array.astype(kind.default_dtype))


def _ours(model: onnx.ModelProto, feeds: list[np.ndarray]) -> list[np.ndarray]:
    outs = build_model(model, backend=NdArray)(*[_tensor(f) for f in feeds])
    return [o.to_numpy() for o in (outs if isinstance(outs, tuple) else (outs,))]


def _onnxruntime(model: onnx.ModelProto, feeds: list[np.ndarray]) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: f for i, f in zip(session.get_inputs(), feeds)})


def _assert_same(model: onnx.ModelProto, feeds: list[np.ndarray]) -> None:
    want = _onnxruntime(model, feeds)
    _assert_close(_ours(model, feeds), want)


def _assert_close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL)


# -- the node cases with constant weights: burnbook's layers ----------------------------------
def _node_cases(ops: set[str]) -> list:
    """The onnx package's node cases of `ops`: importing an operator's case
    module runs its exports (collecting every operator's takes far longer)."""
    import importlib

    import onnx.backend.test.case.node as cases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for module in ("lstm", "gru", "rnn"):
            importlib.import_module(f"onnx.backend.test.case.node.{module}")
    seen: set[str] = set()
    picked = []
    for case in cases._NodeTestCases:
        types = [n.op_type for n in case.model.graph.node]
        if len(types) == 1 and types[0] in ops and case.name not in seen:
            seen.add(case.name)
            picked.append(case)
    return picked


def _weights_as_initializers(case) -> tuple[onnx.ModelProto, list, list]:
    """The case's model with W, R, B (and P) stored in the file."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    feeds, expected = case.data_sets[0]
    keep, kept_feeds = [], []
    for vi, value in zip(list(graph.input), feeds):
        if vi.name in ("W", "R", "B", "P"):
            graph.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), vi.name))
        else:
            keep.append(vi)
            kept_feeds.append(np.asarray(value))
    del graph.input[:]
    graph.input.extend(keep)
    return model, kept_feeds, expected


@pytest.mark.parametrize("case", _node_cases({"LSTM", "GRU"}), ids=lambda c: c.name)
def test_node_cases_with_constant_weights_run_on_burnbook_layers(case) -> None:
    model, feeds, expected = _weights_as_initializers(case)
    node = model.graph.node[0]
    source = generate(model).source
    layered = not any(n for n in list(node.input)[4:5] + list(node.input)[7:8])
    assert (f"nn.{node.op_type.capitalize()}Config(" in source) == layered, source
    for got, want in zip(_ours(model, feeds), expected):
        np.testing.assert_allclose(got, np.asarray(want, np.float32), rtol=case.rtol, atol=case.atol)


# -- PyTorch's exports --------------------------------------------------------------------
EXPORTS = sorted(ASSETS.glob("*.onnx"))


def _feeds(model: onnx.ModelProto, batch: int, steps: int, seed: int = 0) -> list[np.ndarray]:
    """Inputs for a classifier of tools/make_recurrent_onnx.py: x `[batch,
    steps, 4]`, then each initial state `[layers*dirs, batch, 8]`. (The
    dynamo exporter fixes the sequence length, whose size it specialises
    while tracing; `steps` yields to it then.)"""
    rng = np.random.default_rng(seed)
    feeds = []
    for vi in model.graph.input:
        if vi.name == "x":
            steps = vi.type.tensor_type.shape.dim[1].dim_value or steps
            feeds.append(rng.standard_normal([batch, steps, 4]).astype(np.float32))
        else:
            first = vi.type.tensor_type.shape.dim[0].dim_value
            feeds.append(rng.standard_normal([first, batch, 8]).astype(np.float32))
    return feeds


def test_every_export_variant_is_stored() -> None:
    from tools.make_recurrent_onnx import VARIANTS, name_of

    names = {name_of(cell, *v, dynamo) for cell in ("lstm", "gru") for v in VARIANTS for dynamo in (False, True)}
    assert names == {p.name for p in EXPORTS}


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_pytorch_exports_match_onnxruntime(path: Path) -> None:
    model = onnx.load(str(path))
    source = generate(model).source
    cell = "Lstm" if path.name.startswith("lstm") else "Gru"
    # every recurrent node of an export has constant weights: burnbook's layers run it
    assert f"nn.{cell}Config(" in source and "onnx_ops.recurrent(" not in source
    _assert_same(model, _feeds(model, 2, 5))
    if "dynamic" in path.name:  # other batch and sequence sizes than the export's
        _assert_same(model, _feeds(model, 3, 9, seed=1))
        _assert_same(model, _feeds(model, 1, 2, seed=2))


def test_a_live_torchscript_export_of_a_bidirectional_lstm_with_state() -> None:
    torch = pytest.importorskip("torch")
    from tools.make_recurrent_onnx import export

    model = onnx.load_from_string(export("lstm", 1, True, True, True, dynamo=False))
    _assert_same(model, _feeds(model, 3, 6))
    del torch


# -- single nodes: what the exports and node cases leave out ------------------------------------
H, I = 3, 2


def _node_model(kind: str, *, dirs: int = 1, layout: int = 0, seq: bool = False, states: bool = False,
                const: bool = False, **attributes) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """One `kind` node over X `[5, 2, I]` (time-major unless layout 1) with
    seeded weights, as inputs or (`const`) initializers."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    rng = np.random.default_rng(7)
    steps, batch = 5, 2
    x = rng.standard_normal([steps, batch, I]).astype(np.float32)
    w = rng.standard_normal([dirs, gates * H, I]).astype(np.float32) * 0.6
    r = rng.standard_normal([dirs, gates * H, H]).astype(np.float32) * 0.6
    b = rng.standard_normal([dirs, 2 * gates * H]).astype(np.float32) * 0.3
    named = {"X": x, "W": w, "R": r, "B": b}
    if seq:
        named["sequence_lens"] = np.array([3, 5], np.int32)
    if states:
        named["initial_h"] = rng.standard_normal([dirs, batch, H]).astype(np.float32)
        if kind == "LSTM":
            named["initial_c"] = rng.standard_normal([dirs, batch, H]).astype(np.float32)
    if layout:  # batch first: the same values, transposed
        for n in ("X", "initial_h", "initial_c"):
            if n in named:
                named[n] = named[n].transpose(1, 0, 2).copy()
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c"]
    node_inputs = [n if n in named else "" for n in order[:7 if kind == "LSTM" else 6]]
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    outputs = ["Y", "Y_h", "Y_c"][:3 if kind == "LSTM" else 2]
    direction = attributes.pop("direction", "forward")
    node = helper.make_node(kind, node_inputs, outputs, hidden_size=H, layout=layout,
                            direction="bidirectional" if dirs == 2 else direction, **attributes)
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    fed = [n for n in named if n == "X" or n in ("sequence_lens", "initial_h", "initial_c") or not const]
    inits = [numpy_helper.from_array(v, n) for n, v in named.items() if n not in fed]
    graph = helper.make_graph([node], kind.lower(), [helper.make_tensor_value_info(n, elem[named[n].dtype],
                                                                                   named[n].shape) for n in fed],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    return onnx.shape_inference.infer_shapes(model), [named[n] for n in fed]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("dirs, layout, direction", [(1, 1, "forward"), (1, 0, "reverse"), (2, 1, "forward")])
@pytest.mark.parametrize("const", [False, True], ids=["general", "layers"])
def test_layouts_directions_and_initial_states(kind: str, dirs: int, layout: int, direction: str,
                                               const: bool) -> None:
    model, feeds = _node_model(kind, dirs=dirs, layout=layout, states=True, const=const, direction=direction)
    if layout == 0:
        _assert_same(model, feeds)
        return
    # onnxruntime runs layout 0 only: the time-major twin on transposed inputs is the reference
    twin, twin_feeds = _node_model(kind, dirs=dirs, states=True, const=const, direction=direction)
    want = _onnxruntime(twin, twin_feeds)
    want = [want[0].transpose(2, 0, 1, 3)] + [w.transpose(1, 0, 2) for w in want[1:]]
    _assert_close(_ours(model, feeds), want)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens_freeze_the_state_and_zero_the_output(kind: str, direction: str) -> None:
    model, feeds = _node_model(kind, dirs=2 if direction == "bidirectional" else 1, seq=True, states=True,
                               const=True, direction=direction)
    _assert_same(model, feeds)


@pytest.mark.parametrize("const", [False, True], ids=["general", "layers"])
def test_gru_linear_before_reset_both_ways(const: bool) -> None:
    for lbr in (0, 1):
        model, feeds = _node_model("GRU", states=True, const=const, linear_before_reset=lbr)
        _assert_same(model, feeds)


@pytest.mark.parametrize("kind, activations", [("LSTM", ["Relu", "Softsign", "Tanh"]), ("GRU", ["Sigmoid", "Relu"]),
                                               ("RNN", ["Relu", "Softplus"])])
def test_clip_and_other_activations(kind: str, activations: list[str]) -> None:
    dirs = 2 if kind == "RNN" else 1
    model, feeds = _node_model(kind, dirs=dirs, const=True, clip=0.7, activations=activations)
    assert "onnx_ops.recurrent(" in generate(model).source
    _assert_same(model, feeds)


def test_a_subset_of_outputs() -> None:
    model, feeds = _node_model("LSTM", const=True)
    node = model.graph.node[0]
    node.output[:] = ["", "Y_h"]
    del model.graph.output[:]
    model.graph.output.append(helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None))
    _assert_same(model, feeds)


@pytest.mark.parametrize("attributes, reason", [
    ({"input_forget": 1}, "input_forget=1"),
    ({"activations": ["HardSigmoid", "Tanh", "Tanh"]}, "activations ['HardSigmoid']"),
    ({"activations": ["Sigmoid", "Tanh"]}, "lists 2 activations; forward needs 3"),
    ({"activation_alpha": [0.5]}, "'activation_alpha'"),
    ({"direction": "sideways"}, "direction='sideways'"),
    ({"layout": 2}, "layout=2"),
])
def test_what_cannot_be_translated_is_refused_naming_the_node(attributes: dict, reason: str) -> None:
    model, _ = _node_model("LSTM", const=True, **attributes)
    model.graph.node[0].name = "encoder_lstm"
    with pytest.raises(OnnxImportError, match="encoder_lstm") as err:
        generate(model)
    assert reason in str(err.value)


# -- If ------------------------------------------------------------------------------------------
def _if_model(cond: bool | None) -> onnx.ModelProto:
    """y = If(cond, then: relu(x) + c, else: x * c) with x an input; both
    branches name their constant `c` and their result `out`. `cond` None
    makes the condition a model input, else a constant."""
    def branch(name: str, op: str, value: float) -> onnx.GraphProto:
        nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.float32([value]), "c"))]
        if op == "Add":
            nodes += [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "c"], ["out"])]
        else:
            nodes += [helper.make_node("Mul", ["x", "c"], ["out"])]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])])

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])]
    nodes = [helper.make_node("Neg", ["x0"], ["x"])]
    inputs[0].name = "x0"
    inits = []
    if cond is None:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    else:
        inits.append(numpy_helper.from_array(np.array(cond), "cond"))
    nodes.append(helper.make_node("If", ["cond"], ["y"], then_branch=branch("then", "Add", 0.5),
                                  else_branch=branch("else", "Mul", 3.0)))
    graph = helper.make_graph(nodes, "if", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("cond", [True, False])
def test_if_with_a_constant_condition_becomes_the_branch_it_takes(cond: bool) -> None:
    model = _if_model(cond)
    source = generate(model).source
    assert " if " not in source.split("def forward")[1]
    assert ("relu" in source) == cond
    x = np.random.default_rng(3).standard_normal([2, 3]).astype(np.float32)
    _assert_same(model, [x])


def test_if_with_a_condition_known_only_at_run_time_picks_its_branch_then() -> None:
    model = _if_model(None)
    x = np.random.default_rng(4).standard_normal([2, 3]).astype(np.float32)
    for cond in (True, False):
        _assert_same(model, [x, np.array(cond)])


def test_an_if_branch_burnbook_cannot_run_is_refused_naming_it() -> None:
    seq = helper.make_graph([helper.make_node("SequenceEmpty", [], ["s"])], "seq_branch", [],
                            [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)])
    node = helper.make_node("If", ["cond"], ["y"], name="choose", then_branch=seq, else_branch=seq)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(OnnxImportError, match=r"'choose'.*'seq_branch' uses 'SequenceEmpty'"):
        generate(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


# -- Scan -----------------------------------------------------------------------------------------
def _scan_model(steps: int | str, **attributes) -> onnx.ModelProto:
    """A running sum and product over x `[2, steps, 3]` scanned along axis 1;
    each step also emits `tanh(sum) * w` with w an outer initializer."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Mul", ["p_in", "x_t"], ["p_out"]),
         helper.make_node("Tanh", ["s_out"], ["t"]), helper.make_node("Mul", ["t", "w"], ["y_t"])],
        "step", [helper.make_tensor_value_info(n, f, [2, 3]) for n in ("s_in", "p_in", "x_t")],
        [helper.make_tensor_value_info(n, f, [2, 3]) for n in ("s_out", "p_out", "y_t")])
    node = helper.make_node("Scan", ["s0", "p0", "x"], ["s", "p", "y"], name="running", body=body, num_scan_inputs=1,
                            scan_input_axes=[1], **attributes)
    graph = helper.make_graph(
        [node], "scan", [helper.make_tensor_value_info("s0", f, [2, 3]), helper.make_tensor_value_info("p0", f, [2, 3]),
                         helper.make_tensor_value_info("x", f, [2, steps, 3])],
        [helper.make_tensor_value_info(n, f, None) for n in ("s", "p", "y")],
        [numpy_helper.from_array(np.float32([0.5, -1.0, 2.0]), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("attributes", [{}, {"scan_input_directions": [1], "scan_output_axes": [2]},
                                        {"scan_output_directions": [1], "scan_output_axes": [-1]}])
def test_scan_with_a_fixed_length_is_unrolled(attributes: dict) -> None:
    model = _scan_model(4, **attributes)
    rng = np.random.default_rng(5)
    feeds = [rng.standard_normal([2, 3]).astype(np.float32), rng.uniform(0.5, 1.5, [2, 3]).astype(np.float32),
             rng.standard_normal([2, 4, 3]).astype(np.float32)]
    _assert_same(model, feeds)
    assert generate(model).source.count("tanh()") == 4  # one step each


def test_scan_over_a_length_known_only_at_run_time_is_refused() -> None:
    with pytest.raises(OnnxImportError, match=r"'running'.*'x' has no fixed length"):
        generate(_scan_model("steps"))


def test_an_outer_value_only_a_branch_reads_survives_constant_folding() -> None:
    f = TensorProto.FLOAT
    outer = helper.make_node("Add", ["a", "b"], ["k"])  # folds to a constant, read only inside the branches
    then = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["o1"])], "then", [],
                             [helper.make_tensor_value_info("o1", f, [3])])
    other = helper.make_graph([helper.make_node("Sub", ["x", "k"], ["o2"])], "else", [],
                              [helper.make_tensor_value_info("o2", f, [3])])
    graph = helper.make_graph(
        [outer, helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)], "fold",
        [helper.make_tensor_value_info("x", f, [3]), helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", f, [3])],
        [numpy_helper.from_array(np.float32([1.0, 2.0, 3.0]), "a"), numpy_helper.from_array(np.float32([0.5]), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.float32([1.0, -2.0, 4.0])
    for cond in (True, False):
        _assert_same(model, [x, np.array(cond)])
