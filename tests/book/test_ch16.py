"""Chapter 16's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.book import exercises
from burnbook.book.chapters import ch16
from burnbook.data import (Dataset, InMemDataset, PartialDataset, ShuffledDataset, SqliteDatasetWriter)
from burnbook.data.dataset.vision.mnist import MnistItem

ex = exercises("16")
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def test_predict_the_lengths():
    assert ex[1].verdict((7, ["six", "seven", "eight", "nine"], [3, 3, 2, 2], 12)).ok
    assert "cannot start" in ex[1].verdict((10, WORDS[6:], [3, 3, 2, 2], 12)).message
    assert "last window" in ex[1].verdict((7, WORDS[7:], [3, 3, 2, 2], 12)).message
    assert "wrong order" in ex[1].verdict((7, WORDS[6:], [2, 2, 3, 3], 12)).message
    assert "composed length" in ex[1].verdict((7, WORDS[6:], [3, 3, 2, 2], 13)).message


class Normalize:
    def __init__(self, scale=255.0, mean=0.1307, std=0.3081, keep_label=True):
        self.scale, self.mean, self.std, self.keep_label = scale, mean, std, keep_label

    def map(self, item):
        return MnistItem((item.image / self.scale - self.mean) / self.std, item.label if self.keep_label else 0)


def test_mapper():
    assert ex[2].verdict(Normalize()).ok and ex[2].verdict(Normalize).ok
    assert "0..255" in ex[2].verdict(Normalize(scale=1.0)).message
    assert "swapped" in ex[2].verdict(Normalize(mean=0.3081, std=0.1307)).message
    assert "label" in ex[2].verdict(Normalize(keep_label=False)).message


@pytest.fixture
def fake_mnist(monkeypatch):
    """A small stand-in for MNIST, so the test needs no data files."""
    items = [MnistItem(np.full((28, 28), i % 256, np.float32), i % 10) for i in range(400)]

    class Fake:
        @staticmethod
        def train():
            return InMemDataset(items)
    monkeypatch.setattr(ch16, "MnistDataset", Fake)
    return ShuffledDataset(InMemDataset(items), seed=42)


def write(path, shuffled, valid=(0, 100), train=(100, 300), names=("valid", "train")):
    with SqliteDatasetWriter(path) as writer:
        writer.write_many(PartialDataset(shuffled, *valid), split=names[0])
        writer.write_many(PartialDataset(shuffled, *train), split=names[1])
    return path


def test_sqlite_splits(tmp_path, fake_mnist):
    assert ex[3].verdict(write(tmp_path / "right.db", fake_mnist)).ok
    assert ex[3].verdict(str(tmp_path / "right.db")).ok
    assert "200 the exercise" in ex[3].verdict(write(tmp_path / "short.db", fake_mnist, train=(100, 200))).message
    assert "not item 100" in ex[3].verdict(write(tmp_path / "off.db", fake_mnist, train=(101, 301))).message
    assert "splits are" in ex[3].verdict(write(tmp_path / "names.db", fake_mnist, names=("test", "train"))).message
    assert "no file" in ex[3].verdict(tmp_path / "missing.db").message


def shifted_class(shifts=(0, -2, 2), roll=False, eager=False):
    class ShiftedDataset(Dataset):
        def __init__(self, source):
            self.source = source
            if eager:
                self.items = [source.get(i) for i in range(source.len())]

        def len(self):
            return 3 * self.source.len()

        def get(self, index):
            if not 0 <= index < self.len():
                return None
            item, by = self.source.get(index // 3), shifts[index % 3]
            if roll:
                return MnistItem(np.roll(item.image, by, axis=1), item.label)
            image = np.zeros_like(item.image)
            if by > 0:
                image[:, by:] = item.image[:, :-by]
            elif by < 0:
                image[:, :by] = item.image[:, -by:]
            else:
                image[:] = item.image
            return MnistItem(image, item.label)
    return ShiftedDataset


def test_lazy_augmentation():
    assert ex[4].verdict(shifted_class()).ok
    assert "wrong way" in ex[4].verdict(shifted_class(shifts=(0, 2, -2))).message
    assert "wraps" in ex[4].verdict(shifted_class(roll=True)).message
    assert "lazily" in ex[4].verdict(shifted_class(eager=True)).message
    assert "Dataset subclass" in ex[4].verdict(shifted_class()(InMemDataset([]))).message
