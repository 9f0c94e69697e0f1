"""SqliteDataset: the writer (atomic), the reader (read-only), codec, concurrency."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sqlite3

import numpy as np
import pytest

from burnbook.data import SqliteDataset, SqliteDatasetWriter
from burnbook.data.dataset.codec import decode_item, encode_item


@dataclasses.dataclass
class Item:
    image: np.ndarray
    label: int


def _items(n: int) -> list[dict]:
    rng = np.random.default_rng(0)
    return [{"image": rng.random((4, 3)).astype(np.float32), "label": i % 10,
             "name": f"item-{i}"} for i in range(n)]


def _write(path, n_train=50, n_test=10):
    with SqliteDatasetWriter(path) as writer:
        for item in _items(n_train):
            writer.write(item)  # split "train" by default
        writer.write_many(_items(n_test), split="test")
    return path


def test_codec_round_trip_types():
    item = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3), "big_endian": np.arange(3, dtype=">i4"),
        "bool": np.array([True, False]), "empty": np.zeros((0, 2)), "scalar": np.float64(2.5),
        "nested": [1, 2.5, "s", b"\x00\x01", None, True, (3, 4)], 7: "int key",
        "dc": Item(np.ones(2, dtype=np.uint8), 3),
    }
    back = decode_item(encode_item(item))
    for key in ("f32", "big_endian", "bool", "empty"):
        assert back[key].dtype == item[key].dtype and back[key].shape == item[key].shape
        np.testing.assert_array_equal(back[key], item[key])
    assert back["f32"].flags.writeable
    assert back["scalar"] == 2.5 and back[7] == "int key"
    assert back["nested"] == [1, 2.5, "s", b"\x00\x01", None, True, [3, 4]]
    assert back["dc"]["label"] == 3 and back["dc"]["image"].dtype == np.uint8
    with pytest.raises(TypeError, match="cannot store a set"):
        encode_item({"s": {1, 2}})
    with pytest.raises(TypeError, match="Python objects"):
        encode_item(np.array([object()]))


def test_write_then_read_splits(tmp_path):
    path = _write(tmp_path / "d.db")
    assert SqliteDataset.splits(path) == ["test", "train"]
    train = SqliteDataset(path)  # split "train"
    test = SqliteDataset.from_db_file(path, "test")
    assert train.len() == 50 and len(test) == 10
    expected = _items(50)
    for i in (0, 17, 49):
        got = train.get(i)
        assert got["label"] == expected[i]["label"] and got["name"] == expected[i]["name"]
        np.testing.assert_array_equal(got["image"], expected[i]["image"])
    assert train.get(50) is None and train.get(-1) is None
    assert train[-1]["name"] == "item-49"
    with pytest.raises(KeyError, match="splits are \\['test', 'train'\\]"):
        SqliteDataset(path, "valid")


def test_item_type_rebuilds_dataclasses(tmp_path):
    path = tmp_path / "items.db"
    with SqliteDatasetWriter(path) as writer:
        writer.write(Item(np.arange(3), 1))
    item = SqliteDataset(path, item_type=Item)[0]
    assert isinstance(item, Item) and item.label == 1


def test_writer_is_atomic(tmp_path):
    path = tmp_path / "d.db"
    writer = SqliteDatasetWriter(path)
    for item in _items(2000):  # more than one flush
        writer.write(item)
    assert not path.exists()  # nothing visible before completion
    assert writer.set_completed() == path
    assert SqliteDataset(path).len() == 2000
    assert [p.name for p in tmp_path.iterdir()] == ["d.db"]  # no temp file left
    with pytest.raises(RuntimeError, match="completed"):
        writer.write({"x": 1})
    with pytest.raises(FileExistsError, match="overwrite=True"):
        SqliteDatasetWriter(path)


def test_writer_failure_keeps_the_old_file(tmp_path):
    path = _write(tmp_path / "d.db", n_train=5, n_test=1)
    with pytest.raises(ZeroDivisionError):
        with SqliteDatasetWriter(path, overwrite=True) as writer:
            writer.write({"x": 1})
            1 / 0
    assert SqliteDataset(path).len() == 5
    assert [p.name for p in tmp_path.iterdir()] == ["d.db"]
    with pytest.raises(ValueError, match="invalid split name"):
        SqliteDatasetWriter(tmp_path / "e.db").write({}, split='x"; DROP TABLE meta; --')


def test_reader_is_read_only_and_checks_format(tmp_path):
    path = _write(tmp_path / "d.db")
    ds = SqliteDataset(path)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ds._connection().execute('DELETE FROM "train"')
    foreign = tmp_path / "foreign.db"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(ValueError, match="not a burnbook SQLite dataset"):
        SqliteDataset(foreign)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(ValueError, match="not a burnbook SQLite dataset"):
        SqliteDataset(junk)
    with pytest.raises(FileNotFoundError, match="missing.db"):
        SqliteDataset(tmp_path / "missing.db")


def _read_all(path: str, split: str, start: int, step: int) -> list[tuple[int, float, str]]:
    ds = SqliteDataset(path, split)
    out = []
    for _ in range(3):
        for i in range(start, ds.len(), step):
            item = ds[i]
            out.append((item["label"], float(item["image"].sum()), item["name"]))
    return out


_INHERITED: list = []


def _read_inherited(start: int, step: int) -> list[str]:
    ds = _INHERITED[0]  # opened by the parent, used here after fork
    return [ds[i]["name"] for i in range(start, ds.len(), step)]


def test_concurrent_reader_processes(tmp_path):
    """Several processes read one file at once, each opening it itself."""
    path = str(_write(tmp_path / "d.db", n_train=400, n_test=10))
    expected = [(x["label"], float(x["image"].sum()), x["name"]) for x in _items(400)]
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ctx.Pool(4) as pool:
        results = pool.starmap(_read_all, [(path, "train", k, 4) for k in range(4)])
    for k, got in enumerate(results):
        assert got == [expected[i] for i in range(k, 400, 4)] * 3


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_connection_inherited_through_fork_is_replaced(tmp_path):
    path = str(_write(tmp_path / "d.db", n_train=200, n_test=1))
    parent_ds = SqliteDataset(path)
    parent_ds[0]  # the parent holds an open connection when the children fork
    _INHERITED[:] = [parent_ds]
    try:
        with multiprocessing.get_context("fork").Pool(4) as pool:
            results = pool.starmap(_read_inherited, [(k, 4) for k in range(4)])
    finally:
        _INHERITED.clear()
    for k, got in enumerate(results):
        assert got == [f"item-{i}" for i in range(k, 200, 4)]
    assert parent_ds[5]["name"] == "item-5"  # the parent's connection still works


def test_pickled_dataset_reopens(tmp_path):
    import pickle

    ds = SqliteDataset(_write(tmp_path / "d.db"))
    ds[0]
    clone = pickle.loads(pickle.dumps(ds))
    assert clone[3]["name"] == "item-3" and clone.len() == 50
    ds.close()
    assert ds[1]["name"] == "item-1"  # reopens after close


def test_data_loader_workers_read_an_open_sqlite_dataset(tmp_path):
    from burnbook.data import DataLoaderBuilder

    ds = SqliteDataset(_write(tmp_path / "d.db", n_train=120, n_test=1))
    ds[0]
    loader = (DataLoaderBuilder(lambda items: [x["name"] for x in items]).batch_size(16).shuffle(1)
              .num_workers(3).build(ds))
    names = [n for batch in loader for n in batch]
    assert names == [f"item-{i}" for i in loader.order(0)]
