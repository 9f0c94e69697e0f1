"""MNIST: `MnistDataset.train()` / `.test()` giving `MnistItem(image, label)`.

Items mirror Burn's `MNISTItem`: `image` is a `[28, 28]` float32 NumPy
array of pixel values 0..255 (not normalised: the batcher does that, as in
the book's guide), `label` an int 0..9.

Where the files are looked for, in this order (the first match wins):

1. `root=...` given: that folder only (files missing there are downloaded
   into it).
2. Otherwise, under the data root (`$BURNBOOK_DATA`, else the user cache
   folder `~/.cache/burnbook` or the platform's equivalent), the folders
   `mnist/` then `mnist-offline/`:
   a. the first of them that holds all four files serves both splits, so
      train and test always come from the same release (never the offline
      train split beside the full test split, which overlap);
   b. else the first that holds the two files of the split asked for;
   c. else the missing files are downloaded into `mnist/`.

A file counts as present as `name.gz` or as the raw `name` (gzip is told by
its magic bytes). Downloads come from the usual mirrors and are checked
against the canonical MD5 sums before they are put in place; files already
on disk are trusted (the offline split's files are not the canonical ones).
With `BURNBOOK_DATA=../shared/data` the offline folder wins: 8,000 train and
2,000 test images.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from burnbook.data import download
from burnbook.data.dataset.base import Dataset
from .idx import IdxError, read_idx

MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
# MD5 of the published .gz files.
MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
FOLDERS = ("mnist", "mnist-offline")
WIDTH = HEIGHT = 28
# 60,000 training plus 10,000 test digits: no MNIST file holds more, so a header
# promising more is refused before its data is inflated.
MAX_ITEMS = 70_000


@dataclasses.dataclass(eq=False)
class MnistItem:
    """One digit: `image` [28, 28] float32 (0..255), `label` int 0..9."""

    image: np.ndarray
    label: int

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MnistItem):
            return NotImplemented
        return self.label == other.label and bool(np.array_equal(self.image, other.image))


def _present(folder: Path, stem: str) -> Path | None:
    for name in (stem + ".gz", stem):
        try:
            if (folder / name).is_file():
                return folder / name
        except OSError as err:  # e.g. a folder this user may not look into
            raise download.DataFolderError(f"cannot look for MNIST's {name} in {folder}: "
                                           f"{err.strerror or err}") from None
    return None


def _has(folder: Path, split: str) -> bool:
    return all(_present(folder, stem) for stem in FILES[split])


def candidate_folders(root: str | os.PathLike | None = None) -> list[Path]:
    """The folders searched, in order (see the module docstring)."""
    if root is not None:
        return [Path(root).expanduser()]
    base = download.data_root()
    return [base / name for name in FOLDERS]


def find_folder(split: str, root: str | os.PathLike | None = None) -> Path | None:
    """The folder that serves `split`, or None when no folder has its files."""
    folders = candidate_folders(root)
    for folder in folders:
        if _has(folder, "train") and _has(folder, "test"):
            return folder
    for folder in folders:
        if _has(folder, split):
            return folder
    return None


def _not_found(split: str, folders: list[Path], root: Any, reason: str,
               error: type[download.DatasetNotFoundError] = download.DatasetNotFoundError,
               ) -> download.DatasetNotFoundError:
    stems = FILES[split]
    missing = [s + ".gz" for s in stems if not _present(folders[0], s)]
    env = os.environ.get(download.ENV_VAR)
    where = f"root={str(root)!r}" if root is not None else (
        f"{download.ENV_VAR}={env}" if env else f"{download.ENV_VAR} is not set, so the user cache folder")
    return error(
        f"MNIST {split} split: {', '.join(missing)} not found.\n"
        f"Searched: {', '.join(str(f) for f in folders)} ({where}).\n"
        f"The files {reason}.\n"
        f"Put the IDX files (gzip or raw) in one of these folders, set {download.ENV_VAR} "
        "to a folder holding mnist/ or mnist-offline/, or pass root=."
    )


def resolve(split: str, root: str | os.PathLike | None = None, download_missing: bool = True) -> tuple[Path, Path]:
    """The (images, labels) files of `split`, downloading them if needed."""
    if split not in FILES:
        raise ValueError(f"MNIST split must be 'train' or 'test', got {split!r}")
    folder = find_folder(split, root)
    folders = candidate_folders(root)
    if folder is None:
        blocked = download.folder_problem(folders[0], write=False)
        if blocked is not None:  # e.g. BURNBOOK_DATA names a file: say so, whatever `download` is
            raise _not_found(split, folders, root, f"cannot be there: {blocked}", download.DataFolderError)
        if not download_missing:
            raise _not_found(split, folders, root, "were not downloaded: download=False")
        folder = folders[0]
        for stem in FILES[split]:
            if _present(folder, stem) is None:
                name = stem + ".gz"
                try:
                    download.fetch(name, [m + name for m in MIRRORS], folder, MD5[name])
                except download.DataFolderError as err:
                    raise _not_found(split, folders, root, f"could not be downloaded: {err}",
                                     download.DataFolderError) from None
                except download.DownloadError as err:
                    raise _not_found(split, folders, root, f"could not be downloaded ({err})") from None
    images, labels = (_present(folder, stem) for stem in FILES[split])
    return images, labels


def _expect(path: Any, what: str, tail: tuple[int, ...]) -> Any:
    """A header check for `read_idx`: uint8 [N, *tail] with N <= MAX_ITEMS,
    refused before any data is read."""

    def check(dtype: np.dtype, dims: tuple[int, ...]) -> None:
        if dtype != np.uint8 or len(dims) != 1 + len(tail) or dims[1:] != tail:
            shape = ", ".join(["N", *map(str, tail)])
            raise IdxError(f"{path}: not an MNIST {what} file (got {dtype} of shape {list(dims)}, "
                           f"expected uint8 [{shape}])")
        if dims[0] > MAX_ITEMS:
            raise IdxError(f"{path}: the header promises {dims[0]:,} {what}s; MNIST has at most "
                           f"{MAX_ITEMS:,} (a wrong or hostile file)")

    return check


def load_arrays(images_path: str | os.PathLike, labels_path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Images uint8 [N, 28, 28] and labels uint8 [N], checked against MNIST's
    layout and size from the headers, before the data is read."""
    images = read_idx(images_path, _expect(images_path, "image", (HEIGHT, WIDTH)))
    labels = read_idx(labels_path, _expect(labels_path, "label", ()))
    if len(images) != len(labels):
        raise IdxError(
            f"{images_path} holds {len(images)} images but {labels_path} holds {len(labels)} "
            "labels: the two files do not belong together")
    if labels.size and int(labels.max()) > 9:
        raise IdxError(f"{labels_path}: label {int(labels.max())} is not a digit 0..9")
    return images, labels


class MnistDataset(Dataset):
    """The MNIST digits of one split (Burn's `MNISTDataset`).

    `images` (uint8 [N, 28, 28]) and `labels` (uint8 [N]) are the raw,
    read-only arrays, for code that wants whole batches at once;
    `folder` is where they were read from.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, split: str = "",
                 folder: Path | None = None) -> None:
        if len(images) != len(labels):
            raise ValueError(f"MnistDataset: {len(images)} images but {len(labels)} labels")
        self.images = images
        self.labels = labels
        self.split = split
        self.folder = folder

    @classmethod
    def new(cls, split: str, root: str | os.PathLike | None = None, download: bool = True) -> "MnistDataset":
        """The `split` ('train' or 'test') found by the search order above."""
        images_path, labels_path = resolve(split, root, download)
        images, labels = load_arrays(images_path, labels_path)
        return cls(images, labels, split, images_path.parent)

    @classmethod
    def train(cls, root: str | os.PathLike | None = None, download: bool = True) -> "MnistDataset":
        return cls.new("train", root, download)

    @classmethod
    def test(cls, root: str | os.PathLike | None = None, download: bool = True) -> "MnistDataset":
        return cls.new("test", root, download)

    def get(self, index: int) -> MnistItem | None:
        if not 0 <= index < len(self.labels):
            return None
        return MnistItem(self.images[index].astype(np.float32), int(self.labels[index]))

    def len(self) -> int:
        return len(self.labels)

    def __repr__(self) -> str:
        return f"MnistDataset(split={self.split!r}, len={self.len()}, folder={str(self.folder)!r})"


# Burn's spellings.
MNISTDataset = MnistDataset
MNISTItem = MnistItem
