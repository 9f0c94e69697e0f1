"""ONNX If with a condition known only at run time (`ops/control._if`): a
Python `if` in the generated forward, so only the branch taken runs.
Hand-built models are compared with onnxruntime for both conditions fed to
the same built model, including branches that would fail on the other
branch's inputs, outputs whose shape differs per branch, an If nested in a
branch and one inside a Loop body; the guard admits only the `if` form the
generator writes."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook import Bool, Float, Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model, generate  # noqa: E402
from burnbook.importer.onnx.guard import check_source  # noqa: E402

from .test_onnx_loop import _compare, _model  # noqa: E402 - the same model builder and comparison with onnxruntime

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
TRUE, FALSE = np.array(True), np.array(False)


def _info(name: str, elem: int, shape: list | None) -> object:
    return helper.make_tensor_value_info(name, elem, shape)


def _branch(nodes: list, outputs: list, name: str, inits: list | None = None) -> object:
    return helper.make_graph(nodes, name, [], outputs, inits or [])


def _ints(name: str, values: list[int]) -> object:
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def _simple_model() -> object:
    """y = x + x if c else x * x, z = x (read from the outer graph) either way;
    both branches name their inner value `t`."""
    then = _branch([helper.make_node("Add", ["x", "x"], ["t"]), helper.make_node("Identity", ["x"], ["tz"])],
                   [_info("t", F, [3]), _info("tz", F, [3])], "then")
    other = _branch([helper.make_node("Mul", ["x", "x"], ["t"]), helper.make_node("Neg", ["x"], ["ez"])],
                    [_info("t", F, [3]), _info("ez", F, [3])], "else")
    node = helper.make_node("If", ["c"], ["y", "z"], then_branch=then, else_branch=other)
    after = helper.make_node("Add", ["y", "z"], ["w"])
    return _model([node, after], [_info("x", F, [3]), _info("c", B, [])], [_info("y", F, [3]), _info("w", F, [3])])


def test_runtime_condition_takes_each_branch():
    x = np.array([1.5, -2.0, 3.0], np.float32)
    _compare(_simple_model(), [{"x": x, "c": TRUE}, {"x": x, "c": FALSE}, {"x": x, "c": TRUE}])


def test_generated_forward_is_one_if_block_not_both_branches():
    source = generate(_simple_model()).source
    assert source.count("if onnx_ops.if_taken(c):") == 1
    assert source.count("        else:") == 1
    forward = source[source.index("def forward"):]
    assert " if c else " not in forward  # no selection of precomputed values
    check_source(source, "Model")


def test_a_constant_condition_inlines_the_branch_it_takes():
    then = _branch([helper.make_node("Add", ["x", "x"], ["t"])], [_info("t", F, [3])], "then")
    other = _branch([helper.make_node("Mul", ["x", "x"], ["e"])], [_info("e", F, [3])], "else")
    cond = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", B, [], [False]))
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    model = _model([cond, node], [_info("x", F, [3])], [_info("y", F, [3])])
    source = generate(model).source
    assert "if_taken" not in source and "x.add(x)" not in source.replace(" ", "")
    _compare(model, [{"x": np.array([1.0, 2.0, -3.0], np.float32)}])


def _reshape_model() -> object:
    """then: x as [2, n/2]; else: x as [3, n/3]. Each Reshape fails for the
    lengths the other branch is fed, so computing both would fail; the
    output's shape differs per branch."""
    then = _branch([helper.make_node("Reshape", ["x", "two_rows"], ["t"])], [_info("t", F, [2, None])], "then",
                   [_ints("two_rows", [2, -1])])
    other = _branch([helper.make_node("Reshape", ["x", "three_rows"], ["e"])], [_info("e", F, [3, None])], "else",
                    [_ints("three_rows", [3, -1])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    return _model([node], [_info("x", F, ["n"]), _info("c", B, [])], [_info("y", F, [None, None])])


def test_only_the_taken_branch_runs():
    model = _reshape_model()
    four = np.arange(4, dtype=np.float32)  # [2, 2]; no [3, ?]
    nine = np.arange(9, dtype=np.float32) - 4  # [3, 3]; no [2, ?]
    _compare(model, [{"x": four, "c": TRUE}, {"x": nine, "c": FALSE}, {"x": np.arange(6, dtype=np.float32),
                                                                        "c": FALSE}])
    # the untaken branch really is invalid for that input: taking it fails
    ours = build_model(model, backend=NdArray)
    with pytest.raises(ValueError, match=re.escape("cannot reshape [4]")):
        ours(Tensor[NdArray, 1, Float].from_data(four), Tensor[NdArray, 1, Bool].from_data(np.array([False])))


def test_a_gather_valid_only_in_its_branch():
    """else gathers element 4, which exists only for the longer inputs it is
    fed; then keeps the first element."""
    then = _branch([helper.make_node("Slice", ["x", "zero", "one"], ["t"])], [_info("t", F, [1])], "then",
                   [_ints("zero", [0]), _ints("one", [1])])
    other = _branch([helper.make_node("Gather", ["x", "four"], ["e"], axis=0)], [_info("e", F, [1])], "else",
                    [_ints("four", [4])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    model = _model([node], [_info("x", F, ["n"]), _info("c", B, [])], [_info("y", F, [1])])
    _compare(model, [{"x": np.array([7.0, 8.0], np.float32), "c": TRUE},
                     {"x": np.arange(6, dtype=np.float32) * 2, "c": FALSE}])


def test_nested_if_in_a_branch():
    """y = (x + 1 if d else x - 1) if c else -x, the inner If reading an outer input."""
    inner_then = _branch([helper.make_node("Add", ["x", "one"], ["it"])], [_info("it", F, [2])], "inner_then")
    inner_else = _branch([helper.make_node("Sub", ["x", "one"], ["ie"])], [_info("ie", F, [2])], "inner_else")
    then = _branch([helper.make_node("If", ["d"], ["t"], then_branch=inner_then, else_branch=inner_else)],
                   [_info("t", F, [2])], "then")
    other = _branch([helper.make_node("Neg", ["x"], ["e"])], [_info("e", F, [2])], "else")
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    one = helper.make_node("Constant", [], ["one"], value=helper.make_tensor("one", F, [], [1.0]))
    model = _model([one, node], [_info("x", F, [2]), _info("c", B, []), _info("d", B, [])], [_info("y", F, [2])])
    x = np.array([0.5, -4.0], np.float32)
    _compare(model, [{"x": x, "c": c, "d": d} for c in (TRUE, FALSE) for d in (TRUE, FALSE)])
    source = generate(model).source
    assert source.count("if onnx_ops.if_taken(") == 2
    check_source(source, "Model")


def test_if_inside_a_loop_body():
    """v <- (v - 3 if v > 10 else 2 v + 1), m times: the branch changes from
    one iteration to the next."""
    then = _branch([helper.make_node("Sub", ["v_in", "three"], ["t"])], [_info("t", F, [])], "then")
    other = _branch([helper.make_node("Mul", ["v_in", "two"], ["e0"]), helper.make_node("Add", ["e0", "one"], ["e"])],
                    [_info("e", F, [])], "else")
    consts = [helper.make_node("Constant", [], [n], value=helper.make_tensor(n, F, [], [v]))
              for n, v in (("three", 3.0), ("two", 2.0), ("one", 1.0), ("ten", 10.0))]
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Greater", ["v_in", "ten"], ["big"]),
         helper.make_node("If", ["big"], ["v_out"], then_branch=then, else_branch=other)],
        "body", [_info("i", I64, []), _info("cond_in", B, []), _info("v_in", F, [])],
        [_info("cond_out", B, []), _info("v_out", F, []), _info("v_out", F, [])])
    loop = helper.make_node("Loop", ["m", "", "v0"], ["v", "steps"], body=body)
    model = _model(consts + [loop], [_info("m", I64, []), _info("v0", F, [])],
                   [_info("v", F, []), _info("steps", F, [None])])
    _compare(model, [{"m": np.array(m, np.int64), "v0": np.array(v0, np.float32)}
                     for m, v0 in ((6, 1.0), (1, 20.0), (3, 11.5))])
    source = generate(model).source
    assert re.search(r"\n {12}if onnx_ops\.if_taken\(", source)  # inside the while block


# -- the guard ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def if_source() -> str:
    return generate(_simple_model()).source


def _if_line(source: str) -> str:
    return next(line for line in source.split("\n") if line.lstrip().startswith("if onnx_ops.if_taken"))


def _else_line(source: str) -> str:
    return next(line for line in source.split("\n") if line.strip() == "else:")


def _without_else(source: str) -> str:
    lines = source.split("\n")
    start = next(i for i, line in enumerate(lines) if line == "        else:")
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("            "))
    return "\n".join(lines[:start] + lines[end:])


def _after_if(source: str, text: str) -> str:
    """`text` inserted right after the if block of forward."""
    lines = source.split("\n")
    start = next(i for i, line in enumerate(lines) if line == "        else:")
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("            "))
    return "\n".join(lines[:end] + [text.rstrip("\n")] + lines[end:])


BAD_IFS = [  # (edit of the generated source, what the guard names)
    (lambda s: s.replace(_if_line(s), "        if True:"), "If whose test is not onnx_ops.if_taken(<name>)"),
    (lambda s: s.replace(_if_line(s), "        if onnx_ops.tensor_like(x, [1]):"), "If whose test is not"),
    (lambda s: s.replace(_if_line(s), "        if onnx_ops.if_taken(x.val()):"), "If whose test is not"),
    (lambda s: s.replace(_if_line(s), "        if onnx_ops.if_taken(c, c):"), "If whose test is not"),
    (lambda s: s.replace(_if_line(s), "        if __import__('os').system('true'):"), "If whose test is not"),
    (lambda s: s.replace(_if_line(s), "        if onnx_ops.if_taken(undefined):"), "Name 'undefined'"),
    (_without_else, "If without an else block"),
    (lambda s: s.replace(_if_line(s), _if_line(s) + "\n            y = __import__('os')"), "Call of '__import__'"),
    (lambda s: s.replace(_if_line(s), _if_line(s) + "\n            y = x.__class__"), "Attribute '__class__'"),
    (lambda s: s.replace(_else_line(s), _else_line(s) + "\n            onnx_ops.ints(x)"),
     "Expr statement in an if branch"),
    (lambda s: s.replace(_else_line(s), _else_line(s) + "\n            for k in x: pass"),
     "For statement in an if branch"),
    (lambda s: s.replace(_if_line(s), _if_line(s) + "\n            if True:\n                y = x\n"
                         "            else:\n                y = x"), "If whose test is not"),
    # a name bound in one branch only is unbound after the if when the other runs
    (lambda s: _after_if(s.replace(_if_line(s), _if_line(s) + "\n            only_then = x"),
                         "        z = only_then\n"), "Name 'only_then'"),
    (lambda s: _after_if(s.replace(_else_line(s), _else_line(s) + "\n            only_else = x"),
                         "        z = only_else\n"), "Name 'only_else'"),
    # nor is a then-branch name readable in the else branch
    (lambda s: s.replace(_else_line(s), _else_line(s) + "\n            z = t_then").replace(
        _if_line(s), _if_line(s) + "\n            t_then = x"), "Name 't_then'"),
    (lambda s: s.replace("        B = resolve_backend", "        if onnx_ops.if_taken(device):\n            y = 1\n"
                         "        else:\n            y = 2\n        B = resolve_backend", 1), "If statement in 'new'"),
]


@pytest.mark.parametrize("edit, what", BAD_IFS, ids=[w for _, w in BAD_IFS])
def test_the_guard_refuses_ifs_the_generator_does_not_write(if_source, edit, what):
    check_source(if_source, "Model")  # the generated one passes
    bad = edit(if_source)
    assert bad != if_source
    with pytest.raises(OnnxImportError, match=re.escape(what)):
        check_source(bad, "Model")


def test_the_guard_reads_a_name_bound_in_both_branches_after_the_if(if_source):
    both = _after_if(if_source.replace(_if_line(if_source), _if_line(if_source) + "\n            k = x").replace(
        _else_line(if_source), _else_line(if_source) + "\n            k = x"), "        z = k\n")
    check_source(both, "Model")

