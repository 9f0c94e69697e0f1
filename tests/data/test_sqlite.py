"""SqliteDataset: the writer (atomic), the reader (read-only), codec, concurrency."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sqlite3

import msgpack
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


# ---------------------------------------------------------------------------
# damaged and foreign files: DatasetError / DatasetNotFoundError naming the place


def _ext(*payload) -> bytes:
    return msgpack.packb(msgpack.ExtType(1, msgpack.packb(list(payload) if len(payload) != 1
                                                           else payload[0], use_bin_type=True)))


_GOOD = encode_item({"image": np.zeros((2, 2), np.float32), "label": 3})

_CORRUPT = {
    "reserved byte (msgpack FormatError)": b"\xc1",
    "nested 2000 deep (msgpack StackError)": b"\x91" * 2000 + b"\x00",
    "truncated": _GOOD[:-3],
    "trailing bytes": _GOOD + b"\x00",
    "empty": b"",
    "array bytes do not fill the shape": _ext("<f4", [5, 5], b"\x00" * 8),
    "array of Python objects": _ext("|O", [1], b"\x00" * 8),
    "unknown dtype": _ext("zz", [1], b"\x00"),
    "array payload not a list": _ext(5),
    "unknown extension type": msgpack.packb(msgpack.ExtType(7, b"x")),
}


@pytest.mark.parametrize("blob", list(_CORRUPT.values()), ids=list(_CORRUPT))
def test_a_corrupt_item_names_the_file_split_and_row(tmp_path, blob):
    from burnbook.data.dataset.base import DatasetError

    path = _write(tmp_path / "d.db")
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE "test" SET item = ? WHERE row_id = 7', (blob,))
    conn.close()
    ds = SqliteDataset(path, "test")
    with pytest.raises(DatasetError, match=r"d\.db: split 'test', row 7: the item's \d+ bytes do not decode"):
        ds[7]
    assert isinstance(DatasetError("x"), ValueError)
    assert ds[6]["name"] == "item-6" and ds[8]["name"] == "item-8"  # the rest still reads


def test_an_item_stored_as_text_is_a_dataset_error(tmp_path):
    from burnbook.data.dataset.base import DatasetError

    path = _write(tmp_path / "d.db")
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE "train" SET item = ? WHERE row_id = 2', ("hello",))
    conn.close()
    with pytest.raises(DatasetError, match=r"split 'train', row 2: the item is str, not a MessagePack blob"):
        SqliteDataset(path)[2]


def test_a_split_table_with_other_columns_names_table_found_and_expected(tmp_path):
    from burnbook.data.dataset.base import DatasetError

    path = _write(tmp_path / "d.db")
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE "valid" (row_id INTEGER PRIMARY KEY, data BLOB, label INTEGER)')
        conn.execute('INSERT INTO "valid" VALUES (0, x\'00\', 1)')
    conn.close()
    with pytest.raises(DatasetError, match=r"table of split 'valid' has columns \['row_id', 'data', 'label'\], "
                                           r"expected \['row_id', 'item'\]"):
        SqliteDataset(path, "valid")
    assert SqliteDataset.splits(path) == ["test", "train", "valid"]
    assert SqliteDataset(path, "train")[0]["name"] == "item-0"


@pytest.mark.parametrize("first, second", [("Train", "train"), ("train", "TRAIN"), ("a.b", "A.B")])
def test_splits_differing_only_in_case_are_refused_before_anything_is_lost(tmp_path, first, second):
    from burnbook.data.dataset.base import DatasetError

    path = tmp_path / "d.db"
    writer = SqliteDatasetWriter(path)
    writer.write({"x": 0}, split=first)
    with pytest.raises(DatasetError, match=rf"split '{second}' collides with split '{first}'.*ignore case"):
        writer.write({"x": 1}, split=second)
    with pytest.raises(DatasetError, match="collides"):
        writer.write_many([{"x": 2}], split=second)
    assert writer.write({"x": 3}, split=first) == 1  # the writer carries on
    writer.set_completed()
    ds = SqliteDataset(path, first)
    assert [item["x"] for item in ds] == [0, 3]
    with pytest.raises(KeyError, match=rf"did you mean '{first}'"):
        SqliteDataset(path, second)


def test_a_collision_inside_a_with_block_keeps_the_old_file(tmp_path):
    from burnbook.data.dataset.base import DatasetError

    path = _write(tmp_path / "d.db")
    with pytest.raises(DatasetError, match="collides"):
        with SqliteDatasetWriter(path, overwrite=True) as writer:
            writer.write({"x": 1}, split="Test")
            writer.write({"x": 2}, split="test")
    assert SqliteDataset(path, "test").len() == 10  # the file before the writer, intact
    assert [p.name for p in tmp_path.iterdir()] == ["d.db"]


@pytest.mark.parametrize("split", ["meta", "Meta", "META", "sqlite_x", "SQLITE_x"])
def test_reserved_split_names_in_any_case(tmp_path, split):
    with pytest.raises(ValueError, match="reserved"):
        SqliteDatasetWriter(tmp_path / "d.db").write({}, split=split)


def test_missing_file_is_dataset_not_found_and_is_not_created(tmp_path):
    from burnbook.data.download import DatasetNotFoundError

    missing = tmp_path / "nowhere" / "missing.db"
    with pytest.raises(DatasetNotFoundError, match=r"no SQLite dataset at .*missing\.db: the path does not exist"):
        SqliteDataset.splits(missing)
    with pytest.raises(DatasetNotFoundError, match=r"missing\.db"):
        SqliteDataset(missing, "train")
    assert not missing.exists() and not missing.parent.exists()
    with pytest.raises(DatasetNotFoundError, match="is a folder"):
        SqliteDataset.splits(tmp_path)


def test_splits_of_a_foreign_file_is_a_dataset_error(tmp_path):
    from burnbook.data.dataset.base import DatasetError

    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(DatasetError, match=r"junk\.db is not a burnbook SQLite dataset"):
        SqliteDataset.splits(junk)
    assert junk.read_bytes() == b"not sqlite at all" * 100
