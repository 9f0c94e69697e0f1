"""Checks for chapter 16, Dataset.

Lengths come from counting; the reader's mapper and dataset are run on
small made-up digits (no MNIST needed); the SQLite file is compared item
by item with the shuffled MNIST the chapter reads."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.data import Dataset, MnistDataset, ShuffledDataset, SqliteDataset
from burnbook.data.dataset.vision.mnist import MnistItem

TITLE = "Dataset"
_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def _lengths(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 4:
        raise AnswerError(f"your answer is {describe(answer)}; pass four answers: (the windows' length, "
                          "their last item, the parts' sizes, the composed length)")
    length, last, sizes, composed = answer
    n, k, parts = len(_WORDS), 4, 4
    problem = compare(length, n - k + 1, "the windows' length", rtol=0, atol=0)
    if problem:
        return problem + (" (a window needs k items: it cannot start in the last k - 1)"
                          if compare(length, n, rtol=0, atol=0) is None or
                          compare(length, n - k, rtol=0, atol=0) is None else "")
    if not isinstance(last, (list, tuple)) or list(last) != _WORDS[n - k:]:
        return f"the last window is not {describe(last)}: which k items does the last window hold?"
    base, extra = divmod(n, parts)
    right = [base + 1] * extra + [base] * (parts - extra)
    problem = compare(sizes, right, "the parts' sizes", rtol=0, atol=0)
    if problem:
        if sorted(as_array(sizes).tolist()) == sorted(right):
            return "the parts' sizes are right, in the wrong order: which parts take the remainder?"
        return problem
    return compare(composed, n + (3 - 2 + 1), "the composed length", rtol=0, atol=0)


def _digits(count: int, seed: int, shape=(28, 28)) -> list[MnistItem]:
    rng = np.random.default_rng(seed)
    return [MnistItem(image=rng.integers(0, 256, shape).astype(np.float32), label=int(rng.integers(0, 10)))
            for _ in range(count)]


def _image_of(item, what: str) -> np.ndarray:
    image = getattr(item, "image", None)
    if image is None:
        raise AnswerError(f"{what} is {describe(item)}, where an item with .image and .label is expected")
    return as_array(image, f"{what}'s image")


def _mapper(answer) -> str | None:
    mapper = call_reader(answer, what="building your mapper", on="with no arguments") \
        if isinstance(answer, type) else answer
    if not callable(getattr(mapper, "map", None)):
        raise AnswerError(f"your answer is {describe(answer)}; pass an object (or class) with a map(item) method")
    for item in _digits(3, 16) + _digits(2, 17, (14, 14)):
        original = MnistItem(item.image.copy(), item.label)
        got = call_reader(mapper.map, item, what="your map", on=f"on a {list(item.image.shape)} digit")
        expected = (original.image / 255.0 - 0.1307) / 0.3081
        image = _image_of(got, "the mapped item")
        problem = compare(image, expected, "the mapped image", rtol=1e-4, atol=1e-4)
        if problem:
            if compare(image, (original.image - 0.1307) / 0.3081, rtol=1e-4, atol=1e-4) is None:
                return "the mapped image is normalised from 0..255, where the mean and std are for 0..1 pixels"
            if compare(image, (original.image / 255.0 - 0.3081) / 0.1307, rtol=1e-4, atol=1e-4) is None:
                return "the mapped image subtracts the std and divides by the mean: swapped?"
            return problem
        if getattr(got, "label", None) != original.label:
            return "the mapped item does not keep the digit's label"
    return None


def _sqlite(answer) -> str | None:
    if not isinstance(answer, (str, os.PathLike)):
        raise AnswerError(f"your answer is {describe(answer)}; pass the path of your SQLite file")
    path = Path(answer)
    if not path.is_file():
        return f"there is no file at {str(path)[:80]!r}"
    try:
        splits = SqliteDataset.splits(path)
    except Exception as err:
        return f"the file is not a dataset SQLite file ({type(err).__name__}: {str(err)[:80]})"
    if sorted(splits) != ["train", "valid"]:
        return f"the file's splits are {splits}; write two, named 'valid' and 'train'"
    try:
        source = ShuffledDataset(MnistDataset.train(), seed=42)
    except Exception as err:
        raise AnswerError(f"MNIST could not be read here to compare with ({type(err).__name__}); "
                          "set BURNBOOK_DATA as the chapter does") from None
    for split, start, count in (("valid", 0, 100), ("train", 100, 200)):
        stored = SqliteDataset(path, split=split, item_type=MnistItem)
        if stored.len() != count:
            return f"the {split!r} split holds {stored.len()} items, not the {count} the exercise asks for"
        for i in range(count):
            if stored.get(i) != source.get(start + i):
                return (f"item {i} of the {split!r} split is not item {start + i} of shuffled_mnist "
                        "(ShuffledDataset(mnist_train, seed=SEED))")
    return None


class _Counting(Dataset):
    """A source that counts its reads: building a lazy dataset must read nothing."""

    def __init__(self, items: list) -> None:
        self.items, self.reads = items, 0

    def len(self) -> int:
        return len(self.items)

    def get(self, index: int):
        self.reads += 1
        return self.items[index] if 0 <= index < len(self.items) else None


def _shift(image: np.ndarray, by: int) -> np.ndarray:
    out = np.zeros_like(image)
    if by > 0:
        out[:, by:] = image[:, :-by]
    elif by < 0:
        out[:, :by] = image[:, -by:]
    else:
        out[:] = image
    return out


def _shifted(answer) -> str | None:
    if not (isinstance(answer, type) and issubclass(answer, Dataset)):
        raise AnswerError(f"your answer is {describe(answer)}; pass the class ShiftedDataset, a Dataset subclass")
    items = _digits(4, 18)
    source = _Counting(items)
    shifted = call_reader(answer, source, what="ShiftedDataset(source)")
    if source.reads:
        return f"building ShiftedDataset read {source.reads} item(s) of the source: read them in get, lazily"
    length = call_reader(shifted.len, what="its len()")
    if length != 3 * len(items):
        return f"over a source of {len(items)} digits its len() is {length!r}, not three per digit"
    for index in range(3 * len(items)):
        item = items[index // 3]
        got = call_reader(shifted.get, index, what="its get", on=f"at index {index}")
        by = (0, -2, 2)[index % 3]
        problem = compare(_image_of(got, f"item {index}"), _shift(item.image, by), f"the image of item {index}",
                          rtol=0, atol=1e-6)
        if problem:
            if by and compare(_image_of(got, "item"), _shift(item.image, -by), rtol=0, atol=1e-6) is None:
                return f"item {index} moves the wrong way: {'left' if by < 0 else 'right'} is asked there"
            if by and compare(_image_of(got, "item"), np.roll(item.image, by, axis=1), rtol=0, atol=1e-6) is None:
                return f"item {index} wraps pixels around; the pixels that enter must be black (0)"
            return problem + f" (item {index} is version {index % 3} of source digit {index // 3})"
        if getattr(got, "label", None) != item.label:
            return f"item {index} does not keep its digit's label"
    if call_reader(shifted.get, 3 * len(items), what="its get", on="one past the end") is not None:
        return "get(len()) should give None, as every Dataset does past its end"
    return None


EXERCISES = [
    Exercise("16", 1, "Predict the lengths", _lengths,
             expects="four answers: (len of WindowsDataset(digits, 4), its last item as a list, the sizes of "
                     "PartialDataset.split(digits, 4) as a list, len of the ComposedDataset)",
             hints=("A window of k consecutive items can start at any index that leaves k - 1 after it.",
                    "split gives nearly equal parts; a composition's length is the sum of its parts'.")),
    Exercise("16", 2, "A Mapper object", _mapper,
             expects="an object (or its class) with a map(item) method",
             hints=("Scale the 0..255 pixels to 0..1 first; the mean and std are for that range.",
                    "Return a new item of the same type, image changed, label kept.")),
    Exercise("16", 3, "Your own splits in SQLite", _sqlite,
             expects="the path of your SQLite file",
             hints=("One SqliteDatasetWriter, two write_many calls, each with its split name.",
                    "Take the items with PartialDataset over shuffled_mnist: 0..100, then 100..300.")),
    Exercise("16", 4, "A lazy augmentation", _shifted,
             expects="the class ShiftedDataset, a Dataset subclass built as ShiftedDataset(source)",
             hints=("Item i is version i % 3 of source item i // 3.",
                    "Shift with slices into a zeroed array, in get; keep only the source in __init__.")),
]
