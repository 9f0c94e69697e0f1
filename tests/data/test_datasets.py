"""The Dataset protocol, InMemDataset and every lazy transformation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from burnbook.data import (ComposedDataset, Dataset, InMemDataset, MapperDataset, PartialDataset,
                           SamplerDataset, ShuffledDataset, WindowsDataset, as_dataset, split)
from burnbook.data.dataset import set_epoch


class Counting(Dataset):
    """A dataset that records which indices were read."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.reads: list[int] = []

    def get(self, index):
        if 0 <= index < self.n:
            self.reads.append(index)
            return index * 10
        return None

    def len(self):
        return self.n


class DuckTyped:
    def get(self, index):
        return "x" if index == 0 else None

    def len(self):
        return 1


def test_protocol_get_len_and_python_sequence():
    ds = InMemDataset([1, 2, 3])
    assert ds.get(0) == 1 and ds.get(2) == 3
    assert ds.get(3) is None and ds.get(-1) is None  # Burn: None out of range
    assert ds.len() == len(ds) == 3
    assert ds[-1] == 3 and list(ds) == [1, 2, 3]
    with pytest.raises(IndexError, match="index 3 out of range for 3 items"):
        ds[3]
    with pytest.raises(TypeError, match="PartialDataset"):
        ds[0:2]
    assert ds[np.int64(1)] == 2
    assert not ds.is_empty() and InMemDataset([]).is_empty()


def test_duck_typed_dataset_and_lists_are_accepted():
    assert isinstance(DuckTyped(), Dataset)
    assert not isinstance([1], Dataset)
    assert as_dataset([1, 2]).len() == 2
    assert MapperDataset(DuckTyped(), str.upper).get(0) == "X"
    with pytest.raises(TypeError, match="get\\(index\\) and len\\(\\)"):
        as_dataset(42)


def test_in_memory_from_json_rows_and_csv(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"a": 1}) + "\n\n" + json.dumps({"a": 2}) + "\n")
    ds = InMemDataset.from_json_rows(rows)
    assert list(ds) == [{"a": 1}, {"a": 2}]
    assert InMemDataset.from_json_rows(rows, parse=lambda r: r["a"]).items == [1, 2]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{oops\n')
    with pytest.raises(ValueError, match="line 2"):
        InMemDataset.from_json_rows(bad)
    csv_file = tmp_path / "t.csv"
    csv_file.write_text("x,y\n1,a\n2,b\n")
    assert InMemDataset.from_csv(csv_file)[1] == {"x": "2", "y": "b"}
    assert InMemDataset.from_dataset(MapperDataset([1, 2], lambda v: v + 1)).items == [2, 3]


def test_mapper_is_lazy_and_accepts_map_objects():
    calls = []

    def mapper(item):
        calls.append(item)
        return item + 1

    base = Counting(5)
    ds = MapperDataset(base, mapper)
    assert calls == [] and base.reads == []  # nothing read or mapped when built
    assert ds.get(2) == 21 and calls == [20] and base.reads == [2]
    assert ds.get(9) is None and calls == [20]  # out of range: mapper not called

    class Norm:
        def map(self, item):
            return item / 10

    assert MapperDataset(base, Norm())[4] == 4.0
    with pytest.raises(TypeError, match="callable"):
        MapperDataset(base, 3)


def test_partial_and_split():
    base = Counting(10)
    part = PartialDataset(base, 2, 5)
    assert base.reads == []
    assert list(part) == [20, 30, 40] and part.get(3) is None and part.get(-1) is None
    assert PartialDataset(base, 8, 100).len() == 2  # end clamped
    assert PartialDataset(base, 12, 20).len() == 0
    with pytest.raises(ValueError):
        PartialDataset(base, 5, 2)
    parts = split(base, 3)
    assert [p.len() for p in parts] == [4, 3, 3]
    assert [x for p in parts for x in p] == [i * 10 for i in range(10)]
    assert [p.len() for p in PartialDataset.split(InMemDataset([1, 2]), 4)] == [1, 1, 0, 0]


def test_shuffled_is_a_seeded_permutation_without_copying():
    base = Counting(50)
    a, b = ShuffledDataset(base, seed=3), ShuffledDataset.with_seed(base, 3)
    assert base.reads == []
    items = list(a)
    assert items == list(b) and sorted(items) == [i * 10 for i in range(50)]
    assert items != [i * 10 for i in range(50)]
    assert list(ShuffledDataset(base, seed=4)) != items
    assert a.get(50) is None
    c = ShuffledDataset(base)  # seed None: fresh entropy, kept for reproduction
    assert list(ShuffledDataset(base, c.seed)) == list(c)


def test_sampler_with_and_without_replacement():
    base = InMemDataset(list(range(10)))
    with_repl = SamplerDataset(base, 1000, seed=0)
    values = list(with_repl)
    assert len(values) == 1000 and set(values) == set(range(10))
    assert values == list(SamplerDataset(base, 1000, with_replacement=True, seed=0))
    without = SamplerDataset.without_replacement(base, 25, seed=1)
    first = list(without)
    # Each item once before any item twice: 10 + 10 + 5.
    assert sorted(first[:10]) == list(range(10)) and sorted(first[10:20]) == list(range(10))
    assert len(set(first[20:])) == 5
    small = SamplerDataset(base, 4, with_replacement=False, seed=2)
    assert len(set(small)) == 4 and small.get(4) is None
    with pytest.raises(ValueError, match="empty"):
        SamplerDataset(InMemDataset([]), 3)


def test_sampler_redraws_per_epoch_reproducibly():
    base = InMemDataset(list(range(100)))
    s = SamplerDataset(base, 20, seed=7)
    epoch0 = list(s)
    s.set_epoch(1)
    epoch1 = list(s)
    assert epoch1 != epoch0
    s.set_epoch(0)
    assert list(s) == epoch0
    t = SamplerDataset(base, 20, seed=7)
    # set_epoch reaches samplers nested inside other transformations.
    set_epoch(MapperDataset(PartialDataset(t, 0, 20), lambda v: v), 1)
    assert list(t) == epoch1


def test_composed_concatenates_lazily_and_skips_empty():
    a, b, c = Counting(3), Counting(0), Counting(2)
    ds = ComposedDataset([a, b, c, [7]])
    assert a.reads == [] and ds.len() == 6
    assert list(ds) == [0, 10, 20, 0, 10, 7]
    assert ds.get(6) is None and ds.get(-1) is None
    assert ComposedDataset([]).len() == 0


def test_windows():
    ds = WindowsDataset(InMemDataset([1, 2, 3, 4]), 3)
    assert ds.len() == 2 and list(ds) == [[1, 2, 3], [2, 3, 4]] and ds.get(2) is None
    assert WindowsDataset(InMemDataset([1]), 3).len() == 0
    with pytest.raises(ValueError):
        WindowsDataset(InMemDataset([1]), 0)


def test_chain_book_example_train_test_split():
    """Shuffle then split, as the book suggests: the two views partition the data."""
    base = InMemDataset(list(range(100)))
    shuffled = ShuffledDataset(base, 42)
    train, test = PartialDataset(shuffled, 0, 80), PartialDataset(shuffled, 80, 100)
    assert sorted(list(train) + list(test)) == list(range(100))
    assert set(train).isdisjoint(test)
