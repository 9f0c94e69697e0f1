"""Loading checks element types (a lossy conversion is an error unless asked
for), a record that is not a map is named, and nesting is limited so that
nothing raises RecursionError later."""

from __future__ import annotations

import json

import msgpack
import numpy as np
import pytest

from burnbook import Int, Tensor
from burnbook.backend import NdArray
from burnbook.module import Module, Param
from burnbook.nn import Linear, LinearConfig
from burnbook.optim import AdamConfig
from burnbook.record import (
    BinBytesRecorder, DoublePrecisionSettings, NamedMpkFileRecorder, ParamRecord, PrettyJsonFileRecorder, Record,
    RecordError,
)
from burnbook.record.base import MAX_DEPTH
from burnbook.tensor import TensorData


def linear() -> Linear:
    NdArray.seed(0)
    return LinearConfig(2, 2).init(backend=NdArray)


def entry(array) -> ParamRecord:
    return ParamRecord("id-" + str(np.asarray(array).dtype), TensorData.from_numpy(np.asarray(array)))


class Counter(Module):
    """A module holding an Int parameter (i64)."""

    steps: Param


def counter() -> Counter:
    return Counter(steps=Param(Tensor[NdArray, 1, Int].from_data(np.array([1, 2], np.int64))))


# -- element types ----------------------------------------------------------------------


def test_bool_weight_and_huge_f64_bias_are_refused_naming_key_and_dtypes():
    record = Record(weight=entry(np.ones((2, 2), bool)), bias=entry(np.array([1e300, -1e300])))
    with pytest.raises(RecordError) as err:
        linear().load_record(record)
    text = str(err.value)
    assert "weight: bool in the record, f32 in the module" in text
    assert "bias: f64 in the record, f32 in the module: 2 value(s) would change" in text and "1e+300" in text
    assert "allow_lossy=True" in text
    loaded = linear().load_record(record, allow_lossy=True)  # asked for: converted as NumPy does
    assert loaded.weight.val().to_numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert np.isinf(loaded.bias.val().to_numpy()).all()


def test_f64_rounding_within_range_loads():
    values = np.array([[1 / 3, 2e30], [-1e-40, np.pi]])  # rounding and an f32 subnormal: expected losses
    bias = np.array([np.inf, np.nan])  # already non-finite: nothing is lost
    loaded = linear().load_record(Record(weight=entry(values), bias=entry(bias)))
    np.testing.assert_array_equal(loaded.weight.val().to_numpy(), values.astype(np.float32))
    assert np.isinf(loaded.bias.val().to_numpy()[0]) and np.isnan(loaded.bias.val().to_numpy()[1])


def test_a_double_precision_file_loads_into_an_f32_module(tmp_path):
    source = linear().map_params(lambda _, p: p.with_value(p.val().mul_scalar(1 / 3)))
    path = source.save_file(tmp_path / "model", NamedMpkFileRecorder(DoublePrecisionSettings))
    loaded = linear().load_file(path, NamedMpkFileRecorder(DoublePrecisionSettings))
    np.testing.assert_array_equal(loaded.weight.val().to_numpy(), source.weight.val().to_numpy())
    # A record made from f64 values (a DoublePrecision pipeline) rounds silently too.
    wide = Record(weight=entry(source.weight.val().to_numpy().astype(np.float64) / 7),
                  bias=entry(np.array([0.1, 0.2])))
    assert linear().load_record(wide).weight.val().to_numpy().dtype == np.float32


@pytest.mark.parametrize("values, dtype, message", [
    (np.array([1.5, 2.0]), "f64", r"f64 in the record, i64 in the module: 1 value\(s\) .*1\.5"),
    (np.array([np.nan, 2.0], np.float32), "f32", "f32 in the record, i64 in the module"),
    (np.array([1e30, 2.0], np.float32), "f32", "f32 in the record, i64 in the module"),
    (np.array([2**64 - 1, 3], np.uint64), "u64", rf"u64 in the record, i64 in the module.*{2**64 - 1}"),
    (np.array([True, False]), "bool", "bool in the record, i64 in the module"),
])
def test_lossy_conversions_into_an_int_parameter(values, dtype, message):
    with pytest.raises(RecordError, match="steps: " + message):
        counter().load_record(Record(steps=entry(values)))
    # Conversions that keep every value load without a word.
    exact = {"f64": [1.0, -4.0], "f32": [7.0, 0.0], "u64": [3, 4], "bool": None}[dtype]
    if exact is not None:
        got = counter().load_record(Record(steps=entry(np.array(exact, values.dtype))))
        assert got.steps.val().to_numpy().tolist() == [int(v) for v in exact]


def test_integer_too_large_for_f32_is_lossy():
    big = np.array([[2**24 + 1, 1], [2, 3]], np.int64)
    with pytest.raises(RecordError, match=r"weight: i64 in the record, f32 in the module: 1 value\(s\).*16777217"):
        linear().load_record(Record(weight=entry(big), bias=entry(np.array([1, 2], np.int32))))
    small = linear().load_record(Record(weight=entry(big - 2**24), bias=entry(np.array([1, 2], np.int32))))
    assert small.weight.val().to_numpy()[0, 0] == 1.0


# -- shape of the record ----------------------------------------------------------------


@pytest.mark.parametrize("item", [5, "weights", [1, 2], None, 2.5])
def test_an_item_that_is_not_a_map_is_named(item):
    doc = {"format": "burnbook-record", "version": 1, "encoding": "bin", "precision": "full",
           "producer": "test", "item": item}
    loaded = BinBytesRecorder().from_bytes(msgpack.packb(doc))
    with pytest.raises(RecordError, match=rf"into Linear: the record holds a {type(item).__name__} value where a "
                                          "map of field names belongs"):
        linear().load_record(loaded)
    if item is not None:  # Record(None) is the empty record
        with pytest.raises(TypeError, match=rf"Record\(\) takes a mapping of field names, got {type(item).__name__}"):
            Record(item)
    with pytest.raises(RecordError, match="optimizer: cannot read the record"):
        AdamConfig().init().load_record(item if item is not None else 0)


def nested(levels: int) -> dict:
    """`levels` records, each inside the previous one."""
    node: dict = {"leaf": 1}
    for _ in range(levels - 1):
        node = {"a": node}
    return node


def document(encoding: str, item) -> bytes:
    doc = {"format": "burnbook-record", "version": 1, "encoding": encoding, "precision": "full",
           "producer": "test", "item": item}
    return json.dumps(doc).encode() if encoding == "json" else msgpack.packb(doc)


@pytest.mark.parametrize("recorder", [BinBytesRecorder(), NamedMpkFileRecorder(), PrettyJsonFileRecorder()],
                         ids=["bin", "named-mpk", "json"])
def test_nesting_is_limited_on_load_and_legal_depth_prints(recorder):
    deepest = recorder.from_bytes(document(recorder.encoding, nested(MAX_DEPTH)))
    assert deepest.depth() == MAX_DEPTH
    text = repr(deepest)  # printing, comparing and flattening all work at the limit
    assert text.count("Record {") == MAX_DEPTH
    assert deepest == Record(nested(MAX_DEPTH)) and deepest.flatten()["a." * (MAX_DEPTH - 1) + "leaf"] == 1
    assert recorder.from_bytes(recorder.to_bytes(deepest)) == deepest
    for levels in (MAX_DEPTH + 1, 600):
        with pytest.raises(RecordError, match=rf"nests {MAX_DEPTH + 1} levels deep; records nest at most "
                                              rf"{MAX_DEPTH} levels"):
            recorder.from_bytes(document(recorder.encoding, nested(levels)))
    lists: object = [1]
    for _ in range(MAX_DEPTH):
        lists = [lists]
    with pytest.raises(RecordError, match=f"at most {MAX_DEPTH} levels"):
        recorder.from_bytes(document(recorder.encoding, {"x": lists}))


def test_records_built_in_python_are_limited_too():
    with pytest.raises(RecordError, match=f"record field 'a.a.a.*': records nest at most {MAX_DEPTH} levels"):
        Record(nested(MAX_DEPTH + 1))
    inner = Record(nested(MAX_DEPTH - 1))
    assert Record(a=inner).depth() == MAX_DEPTH
    with pytest.raises(RecordError, match=f"record field 'b': records nest at most {MAX_DEPTH} levels"):
        Record(b=Record(a=inner))
    with pytest.raises(RecordError, match="at most"):
        Record(x=[[Record(a=inner)]])
