"""The allowlist every generated module passes (`burnbook.importer.onnx.guard`):
constructs the generator never writes are refused with an OnnxImportError
naming the construct and its line, a deliberately broken emitter is caught
before anything runs or is written, and the layer emitters that the ONNX
conformance cases do not reach pass it and match onnxruntime."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook import Bool, Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer import ModelGen  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, build_model, codegen, generate, table  # noqa: E402
from burnbook.importer.onnx.guard import check_source  # noqa: E402
from burnbook.importer.onnx.modelgen import load_source  # noqa: E402

ASSET = Path(__file__).resolve().parents[2] / "notebooks" / "assets" / "mnist_mlp.onnx"


@pytest.fixture(scope="module")
def source() -> str:
    return generate(ASSET, origin="mnist_mlp.onnx").source


def test_generated_source_passes(source):
    tree = check_source(source, "Model")
    assert [type(s).__name__ for s in tree.body].count("ClassDef") == 1


FORWARD = [  # (line inserted before forward's return, what the error names)
    ("import os", "Import statement in 'forward'"),
    ("__import__('os')", "Expr statement in 'forward'"),
    ("y = __import__('os')", "Call of '__import__'"),
    ("y = exec('1')", "Call of 'exec'"),
    ("y = open('f').read()", "Call of 'open'"),
    ("y = getattr(Tensor, 'a')", "Call of 'getattr'"),
    ("y = self.__class__", "Attribute self.__class__"),
    ("y = Path(__file__).write_text('')", "Attribute 'write_text'"),
    ("y = Tensor.__globals__", "Attribute '__globals__'"),
    ("y = [t for t in ()]", "ListComp expression"),
    ("y = lambda: 0", "Lambda expression"),
    ("y = f'{x}'", "JoinedStr expression"),
    ("y = b'x'", "Constant of type bytes"),
    ("y = {'a': 1}", "Dict expression"),
    ("y = Tensor[1:2]", "Slice expression"),
    ("y = Tensor @ Tensor", "BinOp MatMult"),
    ("y = Tensor == Tensor", "Compare other than"),
    ("y = (z := 1)", "NamedExpr expression"),
    ("y = undefined_name", "Name 'undefined_name'"),
    ("del Tensor", "Delete statement"),
    ("Tensor.a = 1", "assignment to a Attribute"),
    ("for i in Tensor: pass", "For statement"),
]


@pytest.mark.parametrize("line, what", FORWARD, ids=[w for _, w in FORWARD])
def test_a_foreign_construct_in_forward_is_refused(source, line, what):
    lines = source.split("\n")
    at = max(i for i, text in enumerate(lines) if text.startswith("        return "))
    lines.insert(at, "        " + line)
    with pytest.raises(OnnxImportError, match=re.escape(f"line {at + 1}: {what}")):
        check_source("\n".join(lines), "Model")


MODULE = [  # (text appended to the module, what the error names)
    ("import os", "Import statement at module level"),
    ("from os import system", "ImportFrom of module os"),
    ("from burnbook import backend", "ImportFrom of 'backend' from burnbook"),
    ("from . import runtime", "ImportFrom of module .None"),
    ("x = 1", "Assign at module level other than RECORD_NAME"),
    ("print(1)", "Expr statement at module level"),
    ("class Other(Module):\n    pass", "2 classes"),
    ("if True:\n    pass", "If statement at module level"),
]


@pytest.mark.parametrize("text, what", MODULE, ids=[w for _, w in MODULE])
def test_a_foreign_construct_at_module_level_is_refused(source, text, what):
    line = source.count("\n") + 1
    with pytest.raises(OnnxImportError, match=re.escape(f"line {line}: {what}")):
        check_source(source + text + "\n", "Model")


CLASS = [  # (replacement of the class line, what the error names)
    ("class Model(Module):\n    import os", "Import statement in the class body"),
    ("class Model(Module):\n    def __getattr__(self, n):\n        return 1", "FunctionDef '__getattr__'"),
    ("class Model(Module):\n    x = 1", "Assign statement in the class body"),
    ("class Model(Module):\n    _replay = print", "Assign statement in the class body"),
    ("class Model(Module, metaclass=type):", "must derive from Module alone"),
    ("@staticmethod\nclass Model(Module):", "must derive from Module alone"),
    ("class Other(Module):", "ClassDef 'Other' (expected 'Model')"),
]


@pytest.mark.parametrize("text, what", CLASS, ids=[w for _, w in CLASS])
def test_a_foreign_class_shape_is_refused(source, text, what):
    with pytest.raises(OnnxImportError, match=re.escape(what)):
        check_source(source.replace("class Model(Module):", text), "Model")


def test_the_replay_hook_is_admitted_once(source):
    hook = "    _replay = replay_call"
    assert hook in source
    with pytest.raises(OnnxImportError, match="Assign statement in the class body"):
        check_source(source.replace(hook, hook + "\n" + hook), "Model")


@pytest.mark.parametrize("char", ["\r", "\x0c", "\x0b", "\x00", "\x85", "\u2028", "\u202e", "\u00e9"])
def test_characters_outside_printable_ascii_are_refused(source, char):
    """Every file string is ascii()-escaped, so the generated text is plain
    printable ASCII; a raw line break of any kind, a NUL or a bidirectional
    override in it can only come from a broken emitter."""
    line = next(i for i, text in enumerate(source.split("\n"), 1) if text.startswith("    def forward"))
    broken = source.replace("    def forward", f"    def{char} forward", 1)
    with pytest.raises(OnnxImportError, match=re.escape(f"line {line}: character {ascii(char)}")):
        check_source(broken, "Model")


def test_code_that_does_not_parse_is_refused(source):
    with pytest.raises(OnnxImportError, match="does not parse"):
        check_source(source + "def (\n", "Model")


def test_load_source_runs_the_check(source):
    load_source(source)  # the real one loads
    with pytest.raises(OnnxImportError, match="Import statement at module level"):
        load_source(source + "import os\n")


# -- a deliberately broken emitter ---------------------------------------------------
SENTINEL = "pwned"
CODE = f'__import__("os").mkdir("{SENTINEL}")'


def _relu_model(node_name: str = "relu", graph_name: str = "g") -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name=node_name)], graph_name,
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _raw_node_name(low, node, a):  # the bug class: a file string spliced into code
    low.bind(node, f"activation.relu({low.var(node.input[0])}) * {node.name}", "relu")


def _extra_statement(low, node, a):
    low.emit("import os")
    low.bind(node, f"activation.relu({low.var(node.input[0])})", "relu")


def _dunder_attribute(low, node, a):
    low.bind(node, f"{low.var(node.input[0])}.__class__", "relu")


BROKEN = [
    (_raw_node_name, CODE, "Call of '__import__'"),
    (_extra_statement, "relu", "Import statement in 'forward'"),
    (_dunder_attribute, "relu", "Attribute '__class__'"),
]


@pytest.mark.parametrize("emitter, node_name, what", BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_a_broken_emitter_is_caught_before_anything_runs(tmp_path, monkeypatch, emitter, node_name, what):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(table.TABLE, "Relu", (emitter, None))
    onnx.save(_relu_model(node_name), tmp_path / "m.onnx")
    with pytest.raises(OnnxImportError, match=r"refusing m\.onnx: .*line \d+: " + re.escape(what)):
        ModelGen().input(tmp_path / "m.onnx").out_dir(tmp_path / "out").run()
    assert not (tmp_path / SENTINEL).exists()
    assert not (tmp_path / "out").exists()  # nothing written
    with pytest.raises(OnnxImportError, match=re.escape(what)):
        build_model(_relu_model(node_name))
    assert not (tmp_path / SENTINEL).exists()


def test_the_old_docstring_emitter_is_caught(tmp_path, monkeypatch):
    """The issue's hole (a graph name inside a triple-quoted docstring),
    reintroduced on purpose: the guard refuses the code it produces."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(codegen, "quote", lambda text: '"""' + str(text) + '"""')
    name = 'x"""; ' + CODE + '; """'
    with pytest.raises(OnnxImportError, match=r"line \d+: Expr statement in the class body"):
        build_model(_relu_model(graph_name=name))
    assert not (tmp_path / SENTINEL).exists()


# -- the layer emitters pass the allowlist and compute what onnxruntime does ---------
def _const(name, shape, seed):
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _layers_1d():
    """Conv1d (stride, padding, bias), ConvTranspose1d (stride, output
    padding), LayerNorm, Dropout, ReduceSum(keepdims)."""
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["A"], strides=[2], pads=[1, 1], dilations=[1]),
        helper.make_node("ConvTranspose", ["A", "W2"], ["T"], strides=[2], output_padding=[1]),
        helper.make_node("LayerNormalization", ["T", "S", "Bn"], ["L"], axis=-1, epsilon=1e-5),
        helper.make_node("Dropout", ["L", "R"], ["D"]),
        helper.make_node("ReduceSum", ["D", "Ax"], ["Y"], keepdims=1),
    ]
    inits = [_const("W1", [4, 2, 3], 1), _const("B1", [4], 2), _const("W2", [4, 3, 3], 3), _const("S", [10], 4),
             _const("Bn", [10], 5), numpy_helper.from_array(np.array(0.3, np.float32), "R"),
             numpy_helper.from_array(np.array([2], np.int64), "Ax")]
    return nodes, inits, [1, 2, 8], [("Y", TensorProto.FLOAT, [1, 3, 1])], 17


def _layers_2d():
    """Grouped, dilated Conv2d without bias, ConvTranspose2d with padding,
    AveragePool2d, MatMul + Add folded into a Linear, and a Cast to bool."""
    nodes = [
        helper.make_node("Conv", ["X", "W1"], ["A"], group=2, dilations=[2, 2]),
        helper.make_node("ConvTranspose", ["A", "W2", "B2"], ["T"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["T"], ["P"], kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("MatMul", ["P", "M"], ["Q"]),
        helper.make_node("Add", ["Q", "Mb"], ["Y"]),
        helper.make_node("Cast", ["X"], ["Z"], to=TensorProto.BOOL),
    ]
    inits = [_const("W1", [4, 2, 3, 3], 6), _const("W2", [4, 3, 2, 2], 7), _const("B2", [3], 8),
             _const("M", [1, 5], 9), _const("Mb", [5], 10)]
    return nodes, inits, [1, 4, 6, 6], [("Y", TensorProto.FLOAT, [1, 3, 1, 5]), ("Z", TensorProto.BOOL, [1, 4, 6, 6])], 17


@pytest.mark.parametrize("build", [_layers_1d, _layers_2d], ids=["1d", "2d"])
def test_layer_emitters_pass_the_guard_and_match_onnxruntime(build):
    ort = pytest.importorskip("onnxruntime")
    nodes, inits, shape_in, outs, opset = build()
    graph = helper.make_graph(nodes, "layers", [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape_in)],
                              [helper.make_tensor_value_info(*o) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model, full_check=True)
    gen = generate(model)
    for layer in ("nn.Conv", "nn.ConvTranspose", "nn.Linear" if build is _layers_2d else "nn.LayerNorm"):
        assert layer in gen.source  # the layer path, not the functional fallback
    x = np.random.default_rng(0).standard_normal(shape_in).astype(np.float32)
    x[..., 0] = 0.0  # some zeros for the Cast to bool
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"X": x})
    got = build_model(model, backend=NdArray)(Tensor[NdArray, len(shape_in)].from_data(x))
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected, strict=True):
        if e.dtype == np.bool_:
            assert isinstance(g, Tensor) and g.kind is Bool
            np.testing.assert_array_equal(g.to_numpy(), e)
        else:
            np.testing.assert_allclose(g.to_numpy(), e, rtol=1e-4, atol=1e-5)
