"""The Hugging Face source: storage into SQLite, never the hub."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from burnbook.data import HuggingfaceDatasetLoader, SqliteDataset
from burnbook.data.dataset.source import store_splits

HAS_DATASETS = importlib.util.find_spec("datasets") is not None


@pytest.fixture(autouse=True)
def offline_hub(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_store_splits_from_plain_rows(tmp_path):
    rows = {"train": [{"text": "a", "label": 0, "x": np.ones(2)}, {"text": "b", "label": 1, "x": np.zeros(2)}],
            "test": [{"text": "c", "label": 1, "x": np.ones(2)}]}
    db = store_splits(rows, tmp_path / "toy.db")
    assert SqliteDataset.splits(db) == ["test", "train"]
    train = SqliteDataset(db, "train")
    assert train.len() == 2 and train[1]["text"] == "b" and train[1]["x"].tolist() == [0.0, 0.0]
    single = store_splits([{"v": 1}], tmp_path / "single.db")  # one iterable: split "train"
    assert SqliteDataset(single)[0] == {"v": 1}


def test_loader_reuses_its_sqlite_file_without_datasets(tmp_path):
    loader = HuggingfaceDatasetLoader("someone/dbpedia_14").with_subset("en").with_base_dir(tmp_path)
    assert loader.db_file() == tmp_path / "someone_dbpedia_14-en.db"
    store_splits({"train": [{"content": "x", "label": 3}]}, loader.db_file())
    ds = loader.dataset("train")
    assert ds.len() == 1 and ds[0]["label"] == 3


@pytest.mark.skipif(HAS_DATASETS, reason="`datasets` is installed")
def test_missing_datasets_package_says_how_to_install(tmp_path):
    with pytest.raises(ImportError, match=r"burnbook\[hf\]"):
        HuggingfaceDatasetLoader("csv").with_base_dir(tmp_path).dataset("train")


@pytest.mark.skipif(not HAS_DATASETS, reason="the optional `datasets` package is not installed")
def test_from_an_in_memory_hf_dataset(tmp_path):
    import datasets

    hf = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"text": ["a", "b", "c"], "label": [0, 1, 0]}),
        "test": datasets.Dataset.from_dict({"text": ["d"], "label": [1]}),
    })
    db = store_splits(hf, tmp_path / "hf.db")
    assert SqliteDataset(db, "train")[2] == {"text": "c", "label": 0}
    assert SqliteDataset(db, "test").len() == 1


@pytest.mark.skipif(not HAS_DATASETS, reason="the optional `datasets` package is not installed")
def test_loader_on_a_local_csv_file(tmp_path):
    csv_file = tmp_path / "rows.csv"
    csv_file.write_text("text,label\nhello,1\nworld,0\n")
    loader = (HuggingfaceDatasetLoader("csv").with_data_files(str(csv_file))
              .with_base_dir(tmp_path / "db").with_huggingface_cache_dir(tmp_path / "hf-cache"))
    ds = loader.dataset("train")
    assert ds.len() == 2 and ds[0] == {"text": "hello", "label": 1}
    assert loader.db_file().is_file()
