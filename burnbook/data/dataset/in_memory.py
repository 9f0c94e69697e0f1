"""`InMemDataset`: items kept in a Python list (Burn's `InMemDataset`).

Well suited to small datasets. Loaders for JSON-lines and CSV files read the
whole file at once; every row becomes a `dict` (CSV values stay strings, as
the CSV format has no types: map them with a `MapperDataset`).

`as_dataset` lives here too: it turns a plain list into an `InMemDataset`
wherever a dataset is expected.
"""

from __future__ import annotations

import csv
import json
import os
from typing import Any, Callable, Iterable, Sequence

from .base import Dataset, I


class InMemDataset(Dataset[I]):
    """A dataset over a list of items.

    `InMemDataset(items)` keeps `items` itself when it is a list or tuple
    (Burn moves the `Vec` in; nothing is copied), else builds a list from the
    iterable.
    """

    def __init__(self, items: Iterable[I]) -> None:
        self.items: Sequence[I] = items if isinstance(items, (list, tuple)) else list(items)

    def get(self, index: int) -> I | None:
        if 0 <= index < len(self.items):
            return self.items[index]
        return None

    def len(self) -> int:
        return len(self.items)

    @classmethod
    def from_dataset(cls, dataset: Any) -> "InMemDataset":
        """Materialise another dataset (every item read once, in order)."""
        dataset = as_dataset(dataset)
        return cls([dataset.get(i) for i in range(dataset.len())])

    @classmethod
    def from_json_rows(cls, path: str | os.PathLike,
                       parse: Callable[[Any], I] | None = None) -> "InMemDataset":
        """One item per line of a JSON-lines file (blank lines skipped).

        `parse`, when given, turns each decoded row into an item (for example
        a dataclass: `parse=lambda row: Item(**row)`).
        """
        items = []
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{os.fspath(path)}, line {number}: not valid JSON ({err})") from None
                items.append(parse(row) if parse else row)
        return cls(items)

    @classmethod
    def from_csv(cls, path: str | os.PathLike, parse: Callable[[dict], I] | None = None,
                 **reader_options: Any) -> "InMemDataset":
        """One item per row of a CSV file with a header row, as `dict[str, str]`.

        `reader_options` go to `csv.DictReader` (e.g. `delimiter="\\t"`);
        `parse` turns each row into an item.
        """
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, **reader_options))
        return cls([parse(r) for r in rows] if parse else rows)


def as_dataset(obj: Any) -> Any:
    """`obj` itself when it has `get` and `len`; a list or tuple wrapped in an
    `InMemDataset` (not copied); otherwise a `TypeError` saying what is needed."""
    if isinstance(obj, Dataset):
        return obj
    if isinstance(obj, (list, tuple)):
        return InMemDataset(obj)
    raise TypeError(
        f"expected a dataset (an object with get(index) and len()) or a list, "
        f"got {type(obj).__name__}"
    )
