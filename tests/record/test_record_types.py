"""`Record` and `ParamRecord`: building, reading, equality, flatten, repr."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from burnbook import TensorData
from burnbook.record import ParamRecord, Record


def test_attribute_and_item_access(record: Record) -> None:
    assert record.conv1.weight is record["conv1"]["weight"]
    assert record.conv1.weight.id == "p-conv1-w"
    assert record.conv1.weight.shape == [3, 2, 3, 3]
    assert record.layers[1].weight.id == "p-layer1"
    assert record.epoch == 7 and record.kernel == (3, 3)
    assert "conv1" in record and "nope" not in record
    assert list(record)[:3] == ["conv1", "layers", "norm"]
    assert len(record.conv1) == 2


def test_nested_dicts_become_records_and_arrays_tensor_data() -> None:
    rec = Record({"a": {"b": np.ones(2, np.float32)}}, c=np.int64(3))
    assert isinstance(rec.a, Record)
    assert isinstance(rec.a.b, TensorData)
    assert rec.c == 3 and type(rec.c) is int


def test_missing_field_errors_list_the_fields(record: Record) -> None:
    with pytest.raises(AttributeError, match="no field 'conv2'.*conv1"):
        record.conv2
    with pytest.raises(KeyError, match="no field 'x'"):
        record.conv1["x"]


def test_read_only(record: Record) -> None:
    with pytest.raises(AttributeError, match="read-only"):
        record.epoch = 3
    with pytest.raises(TypeError):
        record["epoch"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        record.conv1.weight.id = "other"
    changed = Record({**record, "epoch": 8})
    assert changed.epoch == 8 and record.epoch == 7


@pytest.mark.parametrize("bad, message", [
    ({"x": object()}, "cannot store a object"),
    ({"x": {1: 2}}, "field names must be str"),
    ({"x": 2**70}, "does not fit in 64 bits"),
    ({"x": [1, {"y": set()}]}, r"x\[1\]\.y"),
    ({"x": np.array([1 + 2j])}, "complex"),
])
def test_unstorable_values_are_refused(bad, message) -> None:
    with pytest.raises(TypeError, match=message):
        Record(bad)


def test_param_record_checks_its_parts() -> None:
    with pytest.raises(TypeError, match="id must be a str"):
        ParamRecord(3, np.zeros(1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected TensorData"):
        ParamRecord("a", [1.0])  # type: ignore[arg-type]


def test_equality_is_exact(record: Record) -> None:
    from tests.record.conftest import make_record

    assert record == make_record()
    assert record != make_record(seed=1)
    as_f64 = Record({**record, "scalar": TensorData.from_numpy(np.array(2.5))})
    assert record != as_f64  # same value, other dtype
    assert Record(x=float("nan")) == Record(x=float("nan"))
    assert Record(x=np.array([np.nan], np.float32)) == Record(x=np.array([np.nan], np.float32))
    assert Record(x=[1, 2]) != Record(x=(1, 2))
    assert Record(x=1) != Record(x=True)
    assert ParamRecord("a", np.ones(2)) != ParamRecord("b", np.ones(2))


def test_flatten_names_every_leaf(record: Record) -> None:
    flat = record.flatten()
    assert flat["conv1.weight"] is record.conv1.weight
    assert flat["layers.1.weight"].id == "p-layer1"
    assert flat["sizes"] == [1, 2, 3]  # plain lists are leaves
    assert flat["norm.steps"] is record.norm.steps
    assert "conv1" not in flat


def test_to_dict_and_copy(record: Record) -> None:
    plain = record.to_dict()
    assert isinstance(plain["conv1"], dict) and isinstance(plain["layers"][0], dict)
    assert Record(plain) == record
    assert copy.deepcopy(record) == record


def test_repr_summarises_tensors(record: Record) -> None:
    text = repr(record)
    assert "weight: ParamRecord(id='p-conv1-w', f32 [3, 2, 3, 3])," in text
    assert "steps: TensorData(i64 [4])" in text
    assert "kernel: (3, 3)" in text
    assert repr(Record()) == "Record {}"


def test_dir_lists_fields_for_tab_completion(record: Record) -> None:
    assert "conv1" in dir(record) and "flatten" in dir(record)
