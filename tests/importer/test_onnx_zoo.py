"""The architecture zoo end to end (issue 16): every model of tests/importer/zoo.py,
exported by both PyTorch exporters with a static and a dynamic batch (52
ONNX files), imported with `build_model` and run on NdArray, must agree with
onnxruntime on the same file to 1e-4; a dynamic export is run at two batch
sizes (and two lengths for a sequence model). The bar is 95 % of each
exporter's 26 (the dynamo half runs from test_onnx_zoo_dynamo.py).
Also: constant folding keeps the exporters' shape arithmetic out of the
generated code without freezing a dynamic dim, and a refusal names the
node, the file and the opset, and says what re-export would help.
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")  # the dynamo exporter's translator
onnx = pytest.importorskip("onnx")

from burnbook import Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model, generate  # noqa: E402

from . import zoo  # noqa: E402

BAR = 0.95
TOLERANCE = 1e-4

CASES = [(name, exporter, dynamic) for name in zoo.ARCHITECTURES for exporter in zoo.EXPORTERS
         for dynamic in (False, True)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Where the exports go: a fresh folder, or with BURNBOOK_ONNX_ZOO_CACHE
    set, a folder under it keyed by the zoo's source and the exporters'
    versions, reused by later runs (exporting is most of this test's time)."""
    cache = os.environ.get("BURNBOOK_ONNX_ZOO_CACHE")
    if not cache:
        return tmp_path_factory.mktemp("onnx_zoo")
    import onnxscript
    import torch

    key = hashlib.sha256(Path(zoo.__file__).read_bytes()
                         + f"{torch.__version__} {onnxscript.__version__}".encode()).hexdigest()[:16]
    path = Path(cache) / key
    path.mkdir(parents=True, exist_ok=True)
    return path


def _onnxruntime(path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 4  # a refused input length is reported by run_case, not logged
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _inputs(name: str, dynamic: bool, declared: list) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The export example for a static file; for a dynamic one, inputs with
    batch 3 then 1 and, where the file's length dim is symbolic, lengths 5
    then 9, each with a fallback at the exported length (the TorchScript
    exporter bakes nn.MultiheadAttention's length into its reshapes even
    when the input's length dim is symbolic)."""
    if not dynamic:
        return [(zoo.build(name)[1].numpy(), None)]
    seq_dynamic = len(declared) > 1 and not isinstance(declared[1], int)
    return [(zoo.example_input(name, b, s if seq_dynamic else None).numpy(),
             zoo.example_input(name, b).numpy() if seq_dynamic else None) for b, s in ((3, 5), (1, 9))]


def _first_reason(err: Exception) -> str:
    lines = [line.strip(" -") for line in str(err).splitlines()]
    return lines[1] if len(lines) > 1 else lines[0]


def run_case(name: str, exporter: str, dynamic: bool, folder) -> tuple[str, float]:
    """('ok' or why not, seconds spent importing and running)."""
    path = zoo.export(name, exporter, dynamic, folder)
    start = time.perf_counter()
    try:
        model = build_model(path, backend=NdArray)
    except OnnxImportError as err:
        return f"refused: {_first_reason(err)}", time.perf_counter() - start
    session = _onnxruntime(path)
    feed = session.get_inputs()[0].name
    for x, fallback in _inputs(name, dynamic, session.get_inputs()[0].shape):
        try:
            want = session.run(None, {feed: x})[0]
        except Exception as err:  # noqa: BLE001 - the file cannot take this input: not the importer's fault
            if fallback is None:
                return f"onnxruntime fails on input {list(x.shape)}: {err}", time.perf_counter() - start
            x, want = fallback, session.run(None, {feed: fallback})[0]
        try:
            got = model(Tensor[NdArray, x.ndim].from_data(x)).to_numpy()
        except Exception as err:  # noqa: BLE001 - the table reports every failure
            return f"run failed (input {list(x.shape)}): {type(err).__name__}: {err}", time.perf_counter() - start
        if got.shape != want.shape:
            return f"shape {list(got.shape)} != onnxruntime's {list(want.shape)} (input {list(x.shape)})", \
                time.perf_counter() - start
        err = float(np.max(np.abs(got - want)))
        if not err <= TOLERANCE * max(1.0, float(np.max(np.abs(want)))):
            return f"max |diff| {err:.2e} (input {list(x.shape)})", time.perf_counter() - start
    return "ok", time.perf_counter() - start


def zoo_table(exporter: str, folder, dynamic: bool | None = None) -> None:
    """Run every architecture's export by `exporter` (static and dynamic, or
    only the one `dynamic` names), print the table, and assert the bar."""
    cases = [c for c in CASES if c[1] == exporter and dynamic in (None, c[2])]
    rows, passed = [], 0
    t_export = t_run = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, _, dynamic in cases:
            start = time.perf_counter()
            zoo.export(name, exporter, dynamic, folder)
            exported = time.perf_counter() - start
            verdict, seconds = run_case(name, exporter, dynamic, folder)
            t_export, t_run = t_export + exported, t_run + seconds
            passed += verdict == "ok"
            rows.append(f"{name:20s} {exporter:6s} {'dynamic' if dynamic else 'static':7s} "
                        f"export {exported:4.1f}s run {seconds:4.1f}s  {verdict}")
    which = "" if dynamic is None else (" (dynamic batch)" if dynamic else " (static shapes)")
    print(f"\nONNX zoo, {exporter} exporter{which}: {passed}/{len(cases)} import and match onnxruntime to "
          f"{TOLERANCE:g} (export {t_export:.0f}s, import+run {t_run:.0f}s)")
    print("\n".join(rows))
    assert passed >= BAR * len(cases), f"{passed}/{len(cases)} < {BAR:.0%}:\n" + "\n".join(
        r for r in rows if not r.endswith("ok"))


def test_zoo_legacy_exports_import_and_match_onnxruntime(folder):
    """The TorchScript exporter's half (the dynamo exporter's, four times slower,
    is split over test_onnx_zoo_dynamo.py and test_onnx_zoo_dynamo_dynamic.py,
    files of their own so that pytest-xdist's --dist loadfile spreads them)."""
    zoo_table("legacy", folder)


# -- constant folding ------------------------------------------------------------------
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook.importer.onnx.passes.fold import MAX_FOLDED_ELEMENTS, fold_constants, fold_model  # noqa: E402
from burnbook.importer.onnx.graph import parse  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _plumbing(batch):
    """x[batch, 3, 4] reshaped to [batch, 12] through an exporter's shape
    arithmetic, plus y = x * mask where the mask is built from ConstantOfShape,
    Mod, Equal and Where on x's static dims."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 12])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 3, 4])
    ints = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
        helper.make_node("Gather", ["s", "i1"], ["d1"], axis=0),
        helper.make_node("Gather", ["s", "i2"], ["d2"], axis=0),
        helper.make_node("Mul", ["d1", "d2"], ["d12"]),
        helper.make_node("Unsqueeze", ["d0", "ax0"], ["u0"]),
        helper.make_node("Unsqueeze", ["d12", "ax0"], ["u12"]),
        helper.make_node("Concat", ["u0", "u12"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
        helper.make_node("Shape", ["x"], ["tail"], start=1),
        helper.make_node("ConstantOfShape", ["tail"], ["ones"], value=numpy_helper.from_array(ints(1))),
        helper.make_node("CumSum", ["ones", "axis1"], ["idx"]),
        helper.make_node("Mod", ["idx", "two"], ["odd"]),
        helper.make_node("Equal", ["odd", "one"], ["keep"]),
        helper.make_node("Cast", ["keep"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Where", ["keep", "maskf", "half"], ["mask"]),
        helper.make_node("Mul", ["x", "mask"], ["z"]),
    ]
    scalar = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    inits = [("i0", scalar(0)), ("i1", scalar(1)), ("i2", scalar(2)), ("ax0", ints(0)), ("two", ints(2)),
             ("one", ints(1)), ("half", np.array(0.5, dtype=np.float32)), ("axis1", np.array(1, np.int64))]
    return _model(nodes, [x], [y, z], inits)


def _matches_onnxruntime(model, batches):
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ours = build_model(model, backend=NdArray)
    for b in batches:
        x = np.random.default_rng(b).standard_normal((b, 3, 4)).astype(np.float32)
        want = session.run(None, {"x": x})
        got = ours(Tensor[NdArray, 3].from_data(x))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.to_numpy(), w, rtol=1e-6, atol=1e-6)


def test_static_shape_arithmetic_folds_to_constants():
    model = _plumbing(2)
    graph = fold_constants(parse(model))
    assert [n.op_type for n in graph.nodes] == ["Reshape", "Mul"]
    assert graph.values["target"].const.tolist() == [2, 12]
    mask = graph.values["mask"].const
    assert mask.shape == (3, 4) and mask[0].tolist() == [1.0, 0.5, 1.0, 0.5]
    source = generate(model).source
    assert "Shape" not in source and "onnx_ops.ints" not in source
    _matches_onnxruntime(model, [2])


def test_dynamic_dims_stay_dynamic_while_fixed_dims_fold():
    model = _plumbing("batch")
    graph = fold_constants(parse(model))
    kept = [n.op_type for n in graph.nodes]
    # the batch dim is read at run time; dims 1 and 2 and the whole mask fold
    assert "Shape" in kept and kept.count("Gather") == 1 and "Mod" not in kept and "Where" not in kept
    assert graph.values["d12"].const.tolist() == 12 and graph.values["tail"].const.tolist() == [3, 4]
    assert graph.values["target"].const is None and graph.values["d0"].const is None
    _matches_onnxruntime(model, [1, 5])


def test_folded_reshape_targets_give_ranks_shape_inference_could_not():
    """The TorchScript exporter's nn.MultiheadAttention: a Reshape target
    sliced from Shape(x) at an end computed with Mod, which onnx's shape
    inference does not evaluate, so the Reshape's rank is unknown until the
    target is folded and inference runs again."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 2, 12])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    ints = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Mod", ["five", "three"], ["end0"]),
             helper.make_node("Reshape", ["end0", "one"], ["end"]),
             helper.make_node("Slice", ["s", "zero", "end"], ["lead"]),
             helper.make_node("Concat", ["lead", "heads"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3])]
    model = _model(nodes, [x], [y], [("five", np.array(5, np.int64)), ("three", np.array(3, np.int64)),
                                     ("one", ints(1)), ("zero", ints(0)), ("heads", ints(3, 4))])
    assert parse(model).values["r"].rank is None
    graph = fold_model(model)
    assert graph.values["target"].const.tolist() == [6, 2, 3, 4] and graph.values["r"].rank == 4
    assert [n.op_type for n in graph.nodes] == ["Reshape", "Transpose"]
    import onnxruntime as ort

    data = np.random.default_rng(0).standard_normal((6, 2, 12)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": data})
    got = build_model(model, backend=NdArray)(Tensor[NdArray, 3].from_data(data)).to_numpy()
    np.testing.assert_array_equal(got, want[0])


def test_folding_leaves_random_and_oversized_results_as_nodes():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    big = MAX_FOLDED_ELEMENTS + 1
    nodes = [helper.make_node("RandomNormalLike", ["c"], ["r"], seed=1.0),
             helper.make_node("ConstantOfShape", ["n"], ["huge"]),
             helper.make_node("Add", ["x", "r"], ["y"])]
    model = _model(nodes, [x], [y], [("c", np.zeros(2, np.float32)), ("n", np.array([big], np.int64))])
    graph = fold_constants(parse(model))
    assert [n.op_type for n in graph.nodes] == ["RandomNormalLike", "ConstantOfShape", "Add"]
    assert graph.values["r"].const is None and graph.values["huge"].const is None


# -- refusals ------------------------------------------------------------------------------
def _refusal(model, tmp_path, name="m.onnx") -> str:
    path = tmp_path / name
    onnx.save(model, str(path))
    with pytest.raises(OnnxImportError) as err:
        build_model(path, backend=NdArray)
    return str(err.value).split("\nsupported operators:")[0]


def _unique_on_shape(batch):
    """Shape -> Unique (an operator burnbook does not translate) -> Reshape."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Shape", ["x"], ["/shape/Shape"], name="/shape/Shape"),
             helper.make_node("Unique", ["/shape/Shape"], ["dims"], name="/encoder/layers.0/Unique"),
             helper.make_node("Reshape", ["x", "dims"], ["y"], name="/Reshape")]
    return _model(nodes, [x], [y])


def test_refusal_names_node_file_opset_and_suggests_static_shapes(tmp_path):
    from burnbook.importer.onnx import supported_ops

    assert "Unique" not in supported_ops(), "this test needs an operator burnbook refuses: pick another"
    text = _refusal(_unique_on_shape("batch"), tmp_path, "dyn.onnx")
    assert text.startswith(f"cannot import {tmp_path / 'dyn.onnx'} (opset 17):")
    assert "Unique (node '/encoder/layers.0/Unique')" in text
    assert "dynamic dims ('batch')" in text and "static shapes" in text
    # exported with static shapes, the same graph folds and imports
    model = _unique_on_shape(2)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    got = build_model(model, backend=NdArray)(Tensor[NdArray, 3].from_data(x)).to_numpy()
    np.testing.assert_array_equal(got, x)  # Unique([2, 3, 4]) is the shape itself


def test_refusal_suggests_the_dynamo_exporter(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    aten = _model([helper.make_node("ATen", ["x"], ["y"], name="/ln/ATen", domain="org.pytorch.aten")],
                  [x], [y])
    aten.opset_import.append(helper.make_opsetid("org.pytorch.aten", 1))
    text = _refusal(aten, tmp_path)
    assert "org.pytorch.aten.ATen (node '/ln/ATen')" in text
    assert "ATen fallback" in text and "dynamo=True" in text
    # an operator refused in an opset-17 graph: the dynamo exporter writes opset 18 with other operators
    old = _model([helper.make_node("Unique", ["x"], ["y"], name="/u/Unique")], [x], [y], opset=17)
    assert "opset 17: if it comes from PyTorch's TorchScript exporter" in _refusal(old, tmp_path)
    new = _model([helper.make_node("Unique", ["x"], ["y"], name="/u/Unique")], [x], [y], opset=18)
    assert "hint:" not in _refusal(new, tmp_path)
