"""ONNX import runs no code from the file: injection payloads go into every
string field of a model (graph, node, input, output, initializer and
value_info names, symbolic dims, doc strings, producer, domains, metadata,
attribute names and strings, operator types, denotations, string tensors,
sparse initializers, model-local functions), and the test asserts, independently of
the importer's own checks, that nothing ran: each payload, were it executed,
would create a sentinel folder in the test's working directory. Models whose
names are merely odd must still import, compile and compute the right thing;
the others must be refused with an `OnnxImportError`.

The combinations are chosen, not exhaustive: every payload once with all
fields at the same time, every payload alone in the graph name (the field of
the original hole) and in an input name, and a seeded sample of single
field x payload pairs.
"""

from __future__ import annotations

import importlib.util
import random
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook import Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer import ModelGen  # noqa: E402
from burnbook.importer.onnx import OnnxImportError, codegen, generate  # noqa: E402
from burnbook.importer.onnx import modelgen as modelgen_module  # noqa: E402
from burnbook.importer.onnx.modelgen import load_source, with_weights  # noqa: E402

SENTINEL = "pwned"
# Python that creates ./pwned, written without a quote, backslash or brace so
# that it survives any quoting context it might be spliced into.
CODE = (f"__import__(bytes({tuple(b'os')}).decode()).mkdir(bytes({tuple(SENTINEL.encode())}).decode())"
        .replace(" ", ""))

TEMPLATES = [
    'x"""; {C}; """',  # the payload: closes a triple-quoted docstring
    "x'''; {C}; '''",
    "'; {C}; '",
    '"; {C}; "',
    "\\'; {C}; #",  # a backslash to escape the escaping
    '\\"; {C}; #',
    "x\\",  # a trailing backslash: line continuation or an escaped closing quote
    "x\n{C}\n",
    "x\r\n{C}\r\n",
    "x\r{C}\r",
    "x\u2028{C}\u2028",
    "x\u2029{C}",
    "x\x0b{C}",
    "x\x0c{C}",
    "x\x85{C}",
    "x\x00{C}",
    '"""\n    {C}\n    """',  # class-body indentation
    ")\n        {C}\n        (",  # forward-body indentation
    "x); {C}; (",
    "x], {C}, [",
    "x\\\n{C}",
    "{{{C}}}",  # f-string braces
    '{C!r}f"{{{C}}}"',
    "# \n{C}",  # a comment marker, then a new line
    "x # {C}",
    "'''+{C}+'''",
    "%s %(x)s {{0}} \\N{{BULLET}}",  # format and escape markers
    "x\u202e\"\"\"; {C}; \"\"\"",  # a bidirectional override (Trojan Source)
    "x\u200d; {C}",  # a zero-width joiner
    "\uff3f\uff3fimport\uff3f\uff3f",  # fullwidth underscores: NFKC makes them `__import__`
    "\U0001d68e\U0001d6a1\U0001d68e\U0001d68c({C})",  # mathematical monospace `exec`
    "\u0435\u0445\u0435\u0441({C})",  # Cyrillic homoglyphs of `exec`
]
PAYLOADS = [t.replace("{C}", CODE) if "{C}" in t else t for t in TEMPLATES]
# names that are no code at all but collide with what the generated module uses
ODD_NAMES = ["self", "forward", "new", "load_record", "B", "device", "nn", "class", "__init__", "0", " ", "_",
             "Tensor", "RECORD_NAME", "x.y", "\u6a21\u578b"]

OPSET = 17


def _model(over: dict[str, str]) -> onnx.ModelProto:
    """X [N, 3] -> MatMul W -> Mul C -> Relu -> Softmax -> Y, with each string
    field taken from `over` when present (the `FIELDS` keys)."""
    o = over.get
    x, w, c, hid, y = o("input", "X"), o("initializer", "W"), o("const", "C"), o("value_info", "H"), o("output", "Y")
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), w),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), c),
        helper.make_tensor(o("string_tensor_name", "S"), TensorProto.STRING, [2],
                           [o("string_tensor", "a").encode(), b"b"]),
    ]
    for t in inits:
        t.doc_string = o("doc", "an initializer")
    # attributes Relu does not define, which the importer ignores
    relu_extra = {"note": o("unknown_attribute", "plain"), o("attribute_name", "tag"): 1}
    nodes = [
        helper.make_node("MatMul", [x, w], [hid], name=o("node", "matmul"), doc_string=o("doc", "d")),
        helper.make_node("Mul", [hid, c], ["M"], name="mul", domain=o("node_domain", "")),
        helper.make_node(o("op_type", "Relu"), ["M"], ["R"], name="relu", **relu_extra),
        helper.make_node("Softmax", ["R"], [y], name="softmax", axis=1),
        helper.make_node("Constant", [], ["K"], value=helper.make_tensor(
            "k", TensorProto.STRING, [1], [o("string_tensor", "k").encode()])),
    ]
    if "string_attribute" in over:  # a STRING where Softmax's schema declares an INT
        nodes[3].attribute[0].CopyFrom(helper.make_attribute("axis", over["string_attribute"]))
    if "operand_string_tensor" in over:  # a string tensor used as an operand
        inits[1] = helper.make_tensor(c, TensorProto.STRING, [4], [over["operand_string_tensor"].encode()] * 4)
    for a in nodes[2].attribute:
        a.doc_string = o("doc", "an attribute")
    dim = o("dim_param", "N")
    graph = helper.make_graph(
        nodes, o("graph", "g"),
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [dim, 3], doc_string=o("doc", "d"))],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [dim, 4], doc_string=o("doc", "d"))],
        inits, doc_string=o("doc", "a graph"),
        value_info=[helper.make_tensor_value_info(hid, TensorProto.FLOAT, [dim, 4], doc_string=o("doc", "d"))],
    )
    imports = [helper.make_opsetid("", OPSET), helper.make_opsetid(o("opset_domain", "com.example"), 1)]
    model = helper.make_model(graph, opset_imports=imports, producer_name=o("producer", "fuzz"),
                              producer_version=o("producer_version", "1"), domain=o("domain", "org.example"),
                              doc_string=o("doc", "a model"))
    onnx.helper.set_model_props(model, {o("metadata_key", "k"): o("metadata_value", "v")})
    x_type = model.graph.input[0].type
    x_type.denotation = o("denotation", "TENSOR")
    x_type.tensor_type.shape.dim[0].denotation = o("denotation", "DATA_BATCH")
    sparse = numpy_helper.from_array(np.ones(2, np.float32), o("sparse_name", "sv"))
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(
        sparse, numpy_helper.from_array(np.array([0, 3], np.int64), o("sparse_name", "si")), [4]))
    fn = o("function", "f")  # a model-local function nothing calls
    model.functions.append(helper.make_function(
        fn + ".domain", fn, ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
        [helper.make_opsetid("", OPSET)], doc_string=fn))
    return model


FIELDS = ["graph", "node", "input", "output", "initializer", "const", "value_info", "dim_param", "doc",
          "producer", "producer_version", "domain", "opset_domain", "metadata_key", "metadata_value",
          "string_tensor", "string_tensor_name", "unknown_attribute", "attribute_name", "denotation",
          "sparse_name", "function"]
"""Fields whose payload must import fine (the model merely has odd strings)."""

REFUSED = ["node_domain", "op_type", "string_attribute", "operand_string_tensor"]
"""Fields where any payload makes the model one burnbook cannot import."""

NAME_FIELDS = {"input", "output", "initializer", "const", "value_info", "string_tensor_name", "sparse_name"}


def _all_fields(payload: str) -> dict[str, str]:
    """The payload in every field at once; value names get distinct
    prefixes so they stay distinct values."""
    return {f: (f"{f[0]}{i}{payload}" if f in NAME_FIELDS else payload) for i, f in enumerate(FIELDS)}


def _reference(x: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    c = rng.standard_normal(4).astype(np.float32)
    z = np.maximum((x @ w) * c, 0)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


X = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)


def _import_and_run(model: onnx.ModelProto) -> None:
    """generate -> compile -> load -> forward, checked against NumPy."""
    gen = generate(model)
    compile(gen.source, "<generated>", "exec")
    net = with_weights(load_source(gen.source).Model.new(backend=NdArray), gen.weights)
    out = net(Tensor[NdArray, 2].from_data(X)).to_numpy()
    np.testing.assert_allclose(out, _reference(X), rtol=1e-5, atol=1e-6)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Work in tmp_path, where an executed payload would leave ./pwned."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _assert_nothing_ran(where) -> None:
    assert not (where / SENTINEL).exists(), "an injected payload ran"


def test_the_payload_code_creates_the_sentinel_when_run(in_tmp):
    """The detector works: executed, the code payloads leave ./pwned."""
    exec(CODE)  # noqa: S102 - the test's own string
    assert (in_tmp / SENTINEL).is_dir()


def test_the_payloads_would_inject_into_a_naive_emitter(in_tmp, monkeypatch):
    """Before the fix the graph name went into a triple-quoted docstring;
    with `quote` and the guard undone that way, the issue's payload runs."""
    monkeypatch.setattr(codegen, "quote", lambda text: '"""' + str(text) + '"""')
    monkeypatch.setattr(modelgen_module, "check_source", lambda *a, **k: None)
    monkeypatch.setattr(modelgen_module, "load_source", lambda source, *a, **k: _exec_unchecked(source))
    try:
        modelgen_module.build_model(_model({"graph": PAYLOADS[0]}), backend=NdArray)
    except Exception:  # noqa: BLE001 - whatever the broken code does afterwards
        pass
    assert (in_tmp / SENTINEL).is_dir()


def _exec_unchecked(source: str):
    import types

    module = types.ModuleType("naive")
    exec(compile(source, "<naive>", "exec"), module.__dict__)  # noqa: S102 - the control case of the test
    return module


@pytest.mark.parametrize("index", range(len(PAYLOADS)))
def test_payload_in_every_field_at_once(in_tmp, index):
    _import_and_run(_model(_all_fields(PAYLOADS[index])))
    _assert_nothing_ran(in_tmp)


@pytest.mark.parametrize("field", ["graph", "input"])
def test_every_payload_alone_in_a_field(in_tmp, field):
    for payload in PAYLOADS:
        _import_and_run(_model({field: payload}))
        _assert_nothing_ran(in_tmp)


def test_odd_names_still_import_and_run(in_tmp):
    for name in ODD_NAMES:  # the fields that become identifiers, and a symbolic dim
        for field in ("input", "const", "output", "dim_param"):
            _import_and_run(_model({field: name}))
    _assert_nothing_ran(in_tmp)


def test_a_seeded_sample_of_single_fields(in_tmp):
    rng = random.Random(12)
    for _ in range(60):
        field, payload = rng.choice(FIELDS), rng.choice(PAYLOADS + ODD_NAMES)
        _import_and_run(_model({field: payload}))
    _assert_nothing_ran(in_tmp)


@pytest.mark.parametrize("field", REFUSED)
def test_unimportable_fields_are_refused(in_tmp, field):
    for payload in PAYLOADS:
        with pytest.raises(OnnxImportError):
            generate(_model({field: payload}))
    _assert_nothing_ran(in_tmp)


@pytest.mark.parametrize("op_type, attr", [("Gelu", "approximate"), ("Conv", "auto_pad"), ("MaxPool", "auto_pad")])
def test_payloads_in_string_attributes_are_refused_by_name(in_tmp, op_type, attr):
    """The string attributes burnbook reads: a value ONNX does not define is
    refused, with the node and the attribute named."""
    for payload in PAYLOADS[:8]:
        if op_type == "Gelu":
            node = helper.make_node("Gelu", ["X"], ["Y"], name="g", approximate=payload)
            shape_in, shape_out, opset, inits = [1, 4], [1, 4], 20, []
        else:
            inputs = ["X", "W"] if op_type == "Conv" else ["X"]
            node = helper.make_node(op_type, inputs, ["Y"], name="g", kernel_shape=[3, 3], auto_pad=payload)
            shape_in, shape_out, opset = [1, 1, 5, 5], [1, 1, 3, 3], 17
            inits = [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "W")] if op_type == "Conv" else []
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape_in)],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape_out)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        with pytest.raises(OnnxImportError, match=f"node 'g'.*{attr}="):
            generate(model)
    _assert_nothing_ran(in_tmp)


def test_modelgen_files_compile_and_import(in_tmp):
    """The written module, read back from disk and imported as Python
    imports it, holds the imported model and runs none of the payloads."""
    for i, payload in enumerate(PAYLOADS[::4]):
        path = in_tmp / f"m{i}.onnx"
        onnx.save(_model(_all_fields(payload)), path)
        gen = ModelGen().input(path).out_dir(in_tmp / "out").run()
        compile(gen.source_path.read_bytes(), str(gen.source_path), "exec")
        name = f"burnbook_fuzz_{i}"
        spec = importlib.util.spec_from_file_location(name, gen.source_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
            net = module.Model.default(backend=NdArray)
            out = net(Tensor[NdArray, 2].from_data(X)).to_numpy()
        finally:
            del sys.modules[name]
        np.testing.assert_allclose(out, _reference(X), rtol=1e-5, atol=1e-6)
    _assert_nothing_ran(in_tmp)


def _one_node_model(nodes, inits=(), shape=(5,)):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(shape))], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def test_malformed_tensors_and_nodes_are_refused_by_name():
    """Hostile structure around the strings ends in an OnnxImportError that
    names the tensor, value or node, never in an IndexError or a NumPy error."""
    short = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[5], float_data=[1.0, 2.0])
    with pytest.raises(OnnxImportError, match="tensor 'W' cannot be read"):
        generate(_one_node_model([helper.make_node("Add", ["X", "W"], ["Y"])], [short]))
    starts = helper.make_tensor("S", TensorProto.STRING, [1], [b"1"])  # a string tensor read as ints
    with pytest.raises(OnnxImportError, match="value 'S' has element type 8"):
        generate(_one_node_model([helper.make_node("Slice", ["X", "S", "S"], ["Y"])], [starts]))
    no_output = helper.make_node("Gelu", ["X"], [], approximate="bogus")
    with pytest.raises(OnnxImportError, match=r"node '<Gelu without outputs>' \(Gelu\): Gelu approximate='bogus'"):
        generate(_one_node_model([no_output, helper.make_node("Relu", ["X"], ["Y"])]))
    # a Constant with no output is inert: the model still imports
    generate(_one_node_model([helper.make_node("Constant", [], [], value_float=1.0),
                              helper.make_node("Relu", ["X"], ["Y"])]))
