"""Checks for chapter 25, Training on many machines.

No check starts Ray or trains: the shard sizes follow from an even split
written out here, the mean from NumPy, and the trained models the reader
hands over are compared weight by weight."""

from __future__ import annotations

import numpy as np

from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, compare, describe
from burnbook.train.distributed import UnevenBatchError

TITLE = "Training on many machines"
# The chapter's Holder example: the vectors of process 0 and process 1.
_HELD = (np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0]))


def _parts(answer, names: tuple[str, ...]) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != len(names):
        raise AnswerError(f"your answer is {describe(answer)}; pass a {len(names)}-tuple ({', '.join(names)})")
    return tuple(answer)


def _weights(model, what: str) -> list[np.ndarray]:
    if not callable(getattr(model, "params", None)):
        raise AnswerError(f"{what} is {describe(model)}; pass the trained model (a burnbook Module)")
    return [as_array(p.val(), f"a weight of {what}").astype(np.float64) for p in model.params()]


def _same_model(a, b, what_a: str, what_b: str) -> str | None:
    """None when the two models' weights agree to 1e-5, else what differs."""
    if a is b:
        return f"{what_a} and {what_b} are the same object: train them separately"
    wa, wb = _weights(a, what_a), _weights(b, what_b)
    if [w.shape for w in wa] != [w.shape for w in wb]:
        return f"{what_a} and {what_b} do not have the same parameters"
    gap = max(float(np.abs(x - y).max()) for x, y in zip(wa, wb))
    if gap >= 1e-5:
        return f"{what_a} differs from {what_b} by up to {gap:.2g} in a weight (they should agree to 1e-5)"
    return None


def _even_split(n: int, k: int) -> list[int]:
    """n items over k workers, the first n % k workers one item more."""
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def _three_workers(answer) -> str | None:
    shards, parallel, alone = _parts(answer, ("the shard sizes of a batch of 128", "the model trained on 3 workers",
                                              "the model trained in one process"))
    expected = _even_split(128, 3)
    problem = compare(list(shards) if isinstance(shards, (tuple, list)) else shards, expected, "your shard sizes",
                      rtol=0, atol=0)
    if problem:
        return problem + " (the 128 items are split as evenly as possible, every item used once)"
    return _same_model(parallel, alone, "your 3-worker model", "your single-process model")


def _batch_of_one(answer) -> str | None:
    if not isinstance(answer, BaseException):
        return f"your answer is {describe(answer)}; pass the exception you caught (`except ... as err`)"
    if not isinstance(answer, UnevenBatchError):
        return (f"the error is a {type(answer).__name__}; DataParallel refuses such a batch itself, before it sends "
                "anything to a worker")
    if "1 item" not in str(answer) or "3 workers" not in str(answer):
        return "the error you passed is not about a batch of 1 item over 3 workers"
    return None


def _mean(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != len(_HELD):
        return (f"your answer is {describe(answer)}; pass the list of the values each of the {len(_HELD)} "
                "processes ends with (ray.get of their results)")
    expected = np.mean(_HELD, axis=0)
    for rank, values in enumerate(answer):
        problem = compare(values, expected, f"process {rank}'s values", rtol=1e-6, atol=1e-6)
        if problem:
            return problem + " (the all-reduce sums: what turns a sum of 2 vectors into their mean?)"
    return None


def _resume(answer) -> str | None:
    resumed, straight = _parts(answer, ("the model resumed from epoch 1 on two workers",
                                        "the model of an uninterrupted 3-epoch run"))
    problem = _same_model(resumed, straight, "your resumed model", "your uninterrupted model")
    return problem and problem + " (did the resumed run load the checkpoint of epoch 1 and run 3 epochs in all?)"


EXERCISES = [
    Exercise("25", 1, "Three workers on two CPUs", _three_workers,
             expects="a triple (the shard sizes of a batch of 128 as a list, the model trained on 3 workers, the "
                     "model trained in one process)",
             hints=("128 is not a multiple of 3: some workers get one item more than others.",
                    "Each gradient is weighted by its shard's share, so uneven shards still give the single-process "
                    "step.")),
    Exercise("25", 2, "A batch of one", _batch_of_one,
             expects="the exception that fitting on a batch of 1 item with 3 workers raises",
             hints=("Every worker needs at least one item of the batch.",
                    "Wrap the fit in try/except and pass the error you catch.")),
    Exercise("25", 3, "The mean, not the sum", _mean,
             expects="the list of the values each process ends with, e.g. ray.get([h.allreduce_mean.remote() ...])",
             hints=("Gloo's all-reduce sums; there is no mean operation.",
                    "After the sum, divide by the number of processes in the group.")),
    Exercise("25", 4, "Resume on two workers", _resume,
             expects="a pair (the model resumed from epoch 1 on two workers, the model of an uninterrupted "
                     "single-process 3-epoch run)",
             hints=("A 1-epoch run leaves the checkpoint that a 3-epoch run has after its first epoch.",
                    "Resume with .checkpoint(1) and num_epochs(3) in the same folder, distributed on "
                    "DataParallel(2).")),
]

EXPLAINED = {5: "When does it pay?"}
