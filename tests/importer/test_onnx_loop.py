"""ONNX Loop (`burnbook.importer.onnx.ops.loop`): a runtime `while` in the
generated forward. Hand-built models are compared with onnxruntime over
several trip counts and conditions fed to the same built model (so the loop
is decided when the model runs, not at import), with outer-scope reads,
swapped carried values, scan outputs, a nested loop and opsets 11/13/16;
sequence-carried loops are refused by name, and the guard admits only the
loop form the generator writes."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook import Bool, Float, Int, Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer import ModelGen  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model, generate  # noqa: E402
from burnbook.importer.onnx.guard import check_source  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
KINDS = {np.dtype(np.float32): Float, np.dtype(np.int64): Int, np.dtype(np.bool_): Bool}


def _scalar(name: str, elem: int) -> object:
    return helper.make_tensor_value_info(name, elem, [])


def _model(nodes: list, inputs: list, outputs: list, opset: int = 13) -> object:
    graph = helper.make_graph(nodes, "loop_test", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _body(nodes: list, carried: list, outputs: list, name: str = "body", prefix: str = "") -> object:
    """A Loop body: (iteration number, condition, carried...) -> `outputs`."""
    inputs = [_scalar(prefix + "i", I64), _scalar(prefix + "cond_in", B)] + carried
    return helper.make_graph(nodes, name, inputs, outputs)


def _compare(model: object, feeds_list: list[dict]) -> None:
    """The imported model (built once) against onnxruntime, for each feed."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ours = build_model(model, backend=NdArray)
    names = [vi.name for vi in model.graph.input]
    for feeds in feeds_list:
        want = session.run(None, feeds)
        args = []
        for n in names:
            a = np.asarray(feeds[n])
            args.append(Tensor[NdArray, max(a.ndim, 1), KINDS[a.dtype]].from_data(a.reshape(a.shape or (1,))))
        got = ours(*args)
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g = g.to_numpy()
            w = np.asarray(w)
            g = g.reshape(()) if w.ndim == 0 and g.shape == (1,) else g
            assert g.shape == w.shape, (feeds, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _counted_model(opset: int = 13, typed: bool = True) -> object:
    """A for-loop (trip count M, no condition input): acc = acc * 0.5 + x + i,
    reading the outer input `x`, with acc's every value as a scan output."""
    shape = [2, 3] if typed else None
    body = _body(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=F),
         helper.make_node("Constant", [], ["half"], value=helper.make_tensor("half", F, [], [0.5])),
         helper.make_node("Mul", ["acc_in", "half"], ["scaled"]),
         helper.make_node("Add", ["scaled", "x"], ["plus_x"]),
         helper.make_node("Add", ["plus_x", "i_f"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["acc_step"])],
        [helper.make_tensor_value_info("acc_in", F, shape)],
        [_scalar("cond_out", B), helper.make_tensor_value_info("acc_out", F, shape),
         helper.make_tensor_value_info("acc_step", F, shape)])
    loop = helper.make_node("Loop", ["m", "", "acc0"], ["acc", "steps"], name="counted", body=body)
    outer = [2, 3] if typed else ["rows", "cols"]
    return _model([loop], [_scalar("m", I64), helper.make_tensor_value_info("acc0", F, outer),
                           helper.make_tensor_value_info("x", F, outer)],
                  [helper.make_tensor_value_info("acc", F, outer),
                   helper.make_tensor_value_info("steps", F, [None] + outer)], opset)


@pytest.mark.parametrize("opset", [11, 13, 16])
def test_runtime_trip_count_matches_onnxruntime(opset):
    rng = np.random.default_rng(0)
    acc0, x = rng.standard_normal((2, 2, 3)).astype(np.float32)
    _compare(_counted_model(opset), [{"m": np.array(m, np.int64), "acc0": acc0, "x": x} for m in (3, 1, 7, 0)])


def test_zero_iterations_with_an_unknown_scan_shape_names_the_node():
    model = build_model(_counted_model(typed=False), backend=NdArray)
    m = Tensor[NdArray, 1, Int].from_data(np.array([0]))
    acc0 = x = Tensor[NdArray, 2, Float].zeros([2, 3])
    assert model(Tensor[NdArray, 1, Int].from_data(np.array([2])), acc0, x)[1].dims() == [2, 2, 3]
    with pytest.raises(OnnxImportError, match="Loop node 'counted' ran no iteration"):
        model(m, acc0, x)


def _while_model(with_count: bool) -> object:
    """A while loop: double acc until its sum reaches the outer input `limit`
    (and, `with_count`, at most M times); the sum of each step is a scalar scan output."""
    body = _body(
        [helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"])],
        [helper.make_tensor_value_info("acc_in", F, [3])],
        [_scalar("cond_out", B), helper.make_tensor_value_info("acc_out", F, [3]), _scalar("total", F)])
    loop = helper.make_node("Loop", ["m" if with_count else "", "go", "acc0"], ["acc", "totals"], body=body)
    inputs = ([_scalar("m", I64)] if with_count else []) + [
        _scalar("go", B), helper.make_tensor_value_info("acc0", F, [3]), _scalar("limit", F)]
    return _model([loop], inputs, [helper.make_tensor_value_info("acc", F, [3]),
                                   helper.make_tensor_value_info("totals", F, [None])])


def test_runtime_condition_stops_the_loop_early():
    acc0 = np.array([0.5, 1.0, 0.25], np.float32)
    feeds = [{"go": np.array(True), "acc0": acc0, "limit": np.array(lim, np.float32)} for lim in (10.0, 100.0, 1.0)]
    feeds.append({"go": np.array(False), "acc0": acc0, "limit": np.array(100.0, np.float32)})  # no iteration
    _compare(_while_model(False), feeds)


def test_trip_count_and_condition_together():
    acc0 = np.array([0.5, 1.0, 0.25], np.float32)
    feeds = [{"m": np.array(m, np.int64), "go": np.array(True), "acc0": acc0, "limit": np.array(lim, np.float32)}
             for m, lim in ((2, 1000.0), (50, 30.0), (4, 30.0), (0, 30.0))]
    _compare(_while_model(True), feeds)


def test_carried_values_update_together_and_a_nested_loop():
    """Fibonacci (a, b <- b, a + b: the update must be simultaneous), and per
    outer step an inner loop adding `i` to a running total `i` times."""
    inner = _body(
        [helper.make_node("Identity", ["inner_cond_in"], ["inner_cond_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=F),  # the OUTER iteration number, read from the inner body
         helper.make_node("Add", ["inner_t_in", "i_f"], ["inner_t_out"])],
        [_scalar("inner_t_in", F)], [_scalar("inner_cond_out", B), _scalar("inner_t_out", F)], "inner", "inner_")
    outer = _body(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["a_in", "b_in"], ["ab"]),
         helper.make_node("Loop", ["i", "", "t_in"], ["t_out"], body=inner)],
        [_scalar("a_in", F), _scalar("b_in", F), _scalar("t_in", F)],
        [_scalar("cond_out", B), _scalar("b_in", F), _scalar("ab", F), _scalar("t_out", F), _scalar("a_in", F)],
        "outer")
    loop = helper.make_node("Loop", ["m", "", "a0", "b0", "t0"], ["a", "b", "t", "seq"], body=outer)
    model = _model([loop], [_scalar("m", I64), _scalar("a0", F), _scalar("b0", F), _scalar("t0", F)],
                   [_scalar("a", F), _scalar("b", F), _scalar("t", F),
                    helper.make_tensor_value_info("seq", F, [None])])
    one = np.array(1.0, np.float32)
    _compare(model, [{"m": np.array(m, np.int64), "a0": np.array(0.0, np.float32), "b0": one, "t0": one}
                     for m in (10, 1, 5)])


def test_generated_forward_has_one_runtime_loop():
    source = generate(_counted_model()).source
    assert source.count("while onnx_ops.loop_continues(") == 1
    assert "loop_trip_count(m)" in source


def test_a_sequence_carried_loop_is_refused_by_name(tmp_path):
    """A loop appending to a sequence (as onnx's node case test_loop13_seq)."""
    seq = helper.make_tensor_sequence_value_info
    body = _body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                  helper.make_node("Cast", ["i"], ["i_f"], to=F),
                  helper.make_node("SequenceInsert", ["seq_in", "i_f"], ["seq_out"])],
                 [seq("seq_in", F, [])], [_scalar("cond_out", B), seq("seq_out", F, [])])
    loop = helper.make_node("Loop", ["m", "", "seq_empty"], ["seq_res"], body=body)
    model = _model([helper.make_node("SequenceEmpty", [], ["seq_empty"], dtype=F), loop], [_scalar("m", I64)],
                   [seq("seq_res", F, [])])
    path = tmp_path / "seq_loop.onnx"
    onnx.save(model, path)
    with pytest.raises(OnnxImportError) as err:
        ModelGen().input(path).out_dir(tmp_path / "out").run()
    text = str(err.value)
    assert "seq_loop.onnx (opset 13)" in text
    assert "node 'seq_res' (Loop): loop-carried value 'seq_empty' is of sequence type" in text
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def loop_source() -> str:
    return generate(_counted_model()).source


def _while_line(source: str) -> str:
    return next(line for line in source.split("\n") if line.lstrip().startswith("while "))


def _after_loop(source: str, text: str) -> str:
    """`text` inserted right after the loop block of forward."""
    lines = source.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("        while "))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("            "))
    return "\n".join(lines[:end] + [text.rstrip("\n")] + lines[end:])


BAD_LOOPS = [  # (edit of the generated source, what the guard names)
    (lambda s, w: s.replace(w, "        while True:"), "While whose test is not onnx_ops.loop_continues"),
    (lambda s, w: s.replace(w, "        while onnx_ops.tensor_like(m, [1]):"), "While whose test is not"),
    (lambda s, w: s.replace(w, "        while __import__('os').system('true'):"), "While whose test is not"),
    (lambda s, w: s.replace(w, w + "\n            break"), "Break statement in a loop"),
    (lambda s, w: s.replace(w, w + "\n            for k in m: pass"), "For statement in a loop"),
    (lambda s, w: s.replace(w, w + "\n            onnx_ops.ints(m)"), "Expr statement in a loop"),
    (lambda s, w: s.replace(w, w + "\n            y = __import__('os')"), "Call of '__import__'"),
    (lambda s, w: s.replace(w, w + "\n            while True:\n                y = m"), "While whose test is not"),
    (lambda s, w: _after_loop(s, "        else:\n            y = m\n"), "While with an else block"),
    # a name bound only inside the loop is unbound after it when the loop runs no iteration
    (lambda s, w: _after_loop(s.replace(w, w + "\n            inside = m"), "        z = inside\n"),
     "Name 'inside'"),
    (lambda s, w: s.replace("        B = resolve_backend", w + "\n            y = 1\n"
                            "        B = resolve_backend", 1), "While statement in 'new'"),
]


@pytest.mark.parametrize("edit, what", BAD_LOOPS, ids=[w for _, w in BAD_LOOPS])
def test_the_guard_refuses_loops_the_generator_does_not_write(loop_source, edit, what):
    check_source(loop_source, "Model")  # the generated one passes
    bad = edit(loop_source, _while_line(loop_source))
    assert bad != loop_source
    with pytest.raises(OnnxImportError, match=re.escape(what)):
        check_source(bad, "Model")


def test_a_scripted_torch_loop_matches_onnxruntime(tmp_path):
    """torch's TorchScript exporter writes a `for` over a runtime count and a
    data-dependent `while` as two Loops; the imported model follows both."""
    torch = pytest.importorskip("torch")

    class Looping(torch.nn.Module):
        def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
            y = x
            for _ in range(n):
                y = y * 0.5 + x
            while bool(y.abs().sum() < 100.0):
                y = y * 2.0
            return y

    path = tmp_path / "looping.onnx"
    try:
        with warnings.catch_warnings():  # the legacy exporter's deprecation notice
            warnings.simplefilter("ignore")
            torch.onnx.export(torch.jit.script(Looping()), (torch.ones(2, 3), 3), str(path), dynamo=False,
                              input_names=["x", "n"], output_names=["y"], opset_version=13)
    except Exception as err:  # an exporter without TorchScript support: nothing to compare
        pytest.skip(f"torch's TorchScript ONNX export is not available: {type(err).__name__}: {err}")
    model = onnx.load(path)
    assert [n.op_type for n in model.graph.node].count("Loop") == 2
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    _compare(model, [{"x": x, "n": np.array(n, np.int64)} for n in (3, 0, 6)])


@pytest.mark.parametrize("batch", [2, "n"])
def test_an_opset8_scan_keeps_its_batch_axis(batch):
    """Scan-8 scans every batch row on its own; the version converter drops
    the batch axis, and the importer brings it back as a Loop over the rows."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "next"], ["sum_out"]),
         helper.make_node("Mul", ["sum_out", "next"], ["scan_out"])], "scan_body",
        [helper.make_tensor_value_info("sum_in", F, [2]), helper.make_tensor_value_info("next", F, [2])],
        [helper.make_tensor_value_info("sum_out", F, [2]), helper.make_tensor_value_info("scan_out", F, [2])])
    scan = helper.make_node("Scan", ["", "initial", "x"], ["y", "z"], num_scan_inputs=1, body=body)
    model = _model([scan], [helper.make_tensor_value_info("initial", F, [batch, 2]),
                            helper.make_tensor_value_info("x", F, [batch, 3, 2])],
                   [helper.make_tensor_value_info("y", F, [batch, 2]),
                    helper.make_tensor_value_info("z", F, [batch, 3, 2])], opset=8)
    rng = np.random.default_rng(2)
    sizes = (2,) if batch == 2 else (3, 1)
    _compare(model, [{"initial": rng.standard_normal((b, 2)).astype(np.float32),
                      "x": rng.standard_normal((b, 3, 2)).astype(np.float32)} for b in sizes])


def test_a_carried_value_may_grow_from_one_iteration_to_the_next():
    """A carried value's dims may change per iteration (ONNX allows it):
    here it gains a row of `x` each time."""
    body = _body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                  helper.make_node("Concat", ["acc_in", "x"], ["acc_out"], axis=0)],
                 [helper.make_tensor_value_info("acc_in", F, [None, 3])],
                 [_scalar("cond_out", B), helper.make_tensor_value_info("acc_out", F, [None, 3])])
    loop = helper.make_node("Loop", ["m", "", "acc0"], ["acc"], body=body)
    model = _model([loop], [_scalar("m", I64), helper.make_tensor_value_info("acc0", F, [1, 3]),
                            helper.make_tensor_value_info("x", F, [1, 3])],
                   [helper.make_tensor_value_info("acc", F, [None, 3])])
    acc0, x = np.ones((1, 3), np.float32), np.arange(3, dtype=np.float32).reshape(1, 3)
    _compare(model, [{"m": np.array(m, np.int64), "acc0": acc0, "x": x} for m in (4, 0, 2)])


def test_an_outer_matmul_fused_with_a_bias_add_in_the_body():
    """The importer makes MatMul + Add(constant bias) one Linear layer; when the
    Add sits in the loop body and the MatMul outside, the layer runs before
    the loop and the body reads its output."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "w")
    bias = numpy_helper.from_array(np.ones(3, np.float32), "bias")
    body = _body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                  helper.make_node("Add", ["mm", "bias"], ["lin"]),
                  helper.make_node("Add", ["acc_in", "lin"], ["acc_out"])],
                 [helper.make_tensor_value_info("acc_in", F, [2, 3])],
                 [_scalar("cond_out", B), helper.make_tensor_value_info("acc_out", F, [2, 3])])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["mm"]),
         helper.make_node("Loop", ["m", "", "acc0"], ["acc"], body=body)],
        "fused", [_scalar("m", I64), helper.make_tensor_value_info("x", F, [2, 4]),
                  helper.make_tensor_value_info("acc0", F, [2, 3])],
        [helper.make_tensor_value_info("acc", F, [2, 3])], [w, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert "nn.Linear" in generate(model).source
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    _compare(model, [{"m": np.array(m, np.int64), "x": x, "acc0": np.zeros((2, 3), np.float32)} for m in (3, 0)])
