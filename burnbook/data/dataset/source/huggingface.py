"""`HuggingfaceDatasetLoader`: a Hugging Face dataset stored as `SqliteDataset`.

As in Burn, the first `dataset(split)` call downloads the dataset with the
`datasets` package and writes every split into one SQLite file; later calls
(and later runs) open that file without importing `datasets` at all. The
file is `<data root>/huggingface/<name>[-<subset>].db` unless
`with_base_dir` says otherwise (data root: `$BURNBOOK_DATA`, else the user
cache folder).

`datasets` is an optional extra: `pip install "burnbook[hf]"`. Rows are
stored as dicts; images (PIL) and arrays become NumPy arrays (see
`codec.py`). `store_splits` does the writing and takes any mapping of split
name to iterable of rows, so a local file loaded with `datasets` (or plain
Python rows) can be stored the same way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from burnbook.data import download
from burnbook.data.dataset.sqlite import SqliteDataset, SqliteDatasetWriter


def _import_datasets():
    try:
        import datasets
    except ImportError as err:
        raise ImportError(
            "HuggingfaceDatasetLoader needs the `datasets` package to download a dataset: "
            'pip install "burnbook[hf]" (or pip install datasets)'
        ) from err
    return datasets


def store_splits(source: Mapping[str, Iterable[Any]] | Iterable[Any], db_file: str | os.PathLike,
                 overwrite: bool = True, default_split: str = "train") -> Path:
    """Write every split of `source` into a new SQLite dataset file.

    `source` is a mapping split -> rows (a `datasets.DatasetDict`, a dict of
    lists) or one iterable of rows (a `datasets.Dataset`), stored as
    `default_split`. Written atomically: the file appears when complete.
    """
    splits = source if isinstance(source, Mapping) else {default_split: source}
    with SqliteDatasetWriter(db_file, overwrite=overwrite) as writer:
        for split, rows in splits.items():
            writer.write_many(rows, split=str(split))
    return Path(db_file)


class HuggingfaceDatasetLoader:
    """`HuggingfaceDatasetLoader(name).dataset(split)` -> `SqliteDataset`.

    Builder methods (Burn's): `with_subset`, `with_base_dir`,
    `with_huggingface_token`, `with_huggingface_cache_dir`; plus
    `with_data_files` for the file-based builders (`"csv"`, `"json"`,
    `"parquet"`) and `with_load_options` for any other `load_dataset`
    keyword.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.subset: str | None = None
        self.base_dir: Path | None = None
        self.token: str | None = None
        self.huggingface_cache_dir: str | None = None
        self.data_files: Any = None
        self.load_options: dict[str, Any] = {}

    def with_subset(self, subset: str) -> "HuggingfaceDatasetLoader":
        self.subset = subset
        return self

    def with_base_dir(self, base_dir: str | os.PathLike) -> "HuggingfaceDatasetLoader":
        self.base_dir = Path(base_dir)
        return self

    def with_huggingface_token(self, token: str) -> "HuggingfaceDatasetLoader":
        self.token = token
        return self

    def with_huggingface_cache_dir(self, cache_dir: str | os.PathLike) -> "HuggingfaceDatasetLoader":
        self.huggingface_cache_dir = os.fspath(cache_dir)
        return self

    def with_data_files(self, data_files: Any) -> "HuggingfaceDatasetLoader":
        self.data_files = data_files
        return self

    def with_load_options(self, **options: Any) -> "HuggingfaceDatasetLoader":
        self.load_options.update(options)
        return self

    def db_file(self) -> Path:
        """The SQLite file this loader reads (and writes on first use)."""
        base = self.base_dir if self.base_dir is not None else download.data_root() / "huggingface"
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name)
        if self.subset:
            stem += "-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", self.subset)
        return base / f"{stem}.db"

    def dataset(self, split: str, item_type: Callable[..., Any] | None = None) -> SqliteDataset:
        """The split, downloading and storing the whole dataset on first use."""
        db = self.db_file()
        if not db.is_file():
            self.import_into(db)
        return SqliteDataset(db, split, item_type)

    def import_into(self, db_file: str | os.PathLike) -> Path:
        """Load with `datasets.load_dataset` and store every split in `db_file`."""
        datasets = _import_datasets()
        options = dict(self.load_options)
        if self.data_files is not None:
            options["data_files"] = self.data_files
        if self.huggingface_cache_dir is not None:
            options["cache_dir"] = self.huggingface_cache_dir
        if self.token is not None:
            options["token"] = self.token
        loaded = datasets.load_dataset(self.name, self.subset, **options)
        return store_splits(loaded, db_file)
