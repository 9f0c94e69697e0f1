"""Checks for chapter 17, Custom training loops.

Counts come from integer arithmetic; models the reader hands over are
compared parameter by parameter; `evaluate` runs on a tiny model and a few
made-up digits in uneven batches, against a NumPy cross-entropy and
accuracy of the same model's outputs. No check trains."""

from __future__ import annotations

import numpy as np

from burnbook.backend import Autodiff, NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.data import DataLoaderBuilder, InMemDataset
from burnbook.data.dataset.vision.mnist import MnistItem
from burnbook.examples.guide import MnistBatcher, ModelConfig
from burnbook.optim import AdamConfig

TITLE = "Custom training loops"


def _count(answer) -> str | None:
    names = "(micro-batches, digits in the last one, optimizer steps, digits left in the accumulator)"
    if not isinstance(answer, (tuple, list)) or len(answer) != 4:
        raise AnswerError(f"your answer is {describe(answer)}; pass four whole numbers {names}")
    got = as_array(list(answer), "your four numbers")
    if got.ndim != 1:
        raise AnswerError(f"your answer is not four plain numbers; pass {names}")
    n, size, every = 2000, 24, 5
    batches = -(-n // size)
    last = n - (batches - 1) * size
    steps = batches // every
    left_batches = batches - steps * every
    left = (left_batches - 1) * size + last if left_batches else 0
    if got[0] == n // size:
        return "the data loader keeps the last, shorter micro-batch: count it"
    if got[2] == -(-batches // every):
        return "a step comes only after every 5th micro-batch: the last few never make one"
    if got[3] == left_batches * size:
        return "the digits left count every leftover micro-batch as full; the last one is short"
    return compare(got, [batches, last, steps, left], "your four numbers", rtol=0, atol=0)


def _params(model, what: str) -> dict[str, np.ndarray]:
    if not callable(getattr(model, "named_params", None)):
        raise AnswerError(f"{what} is {describe(model)}, where a module is expected")
    return {name: p.val().to_numpy().astype(np.float64) for name, p in model.named_params()}


def _three_models(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        raise AnswerError(f"your answer is {describe(answer)}; pass three modules (the start model, "
                          "after the batch step, after the accumulated step)")
    start, full, accumulated = (_params(m, w) for m, w in zip(answer, ("the start model", "the batch-step model",
                                                                      "the accumulated-step model")))
    if not (start.keys() == full.keys() == accumulated.keys()):
        return "the three models do not have the same parameters: start all from one model"
    moved = {k: full[k] - start[k] for k in start}
    if all(np.abs(d).max() == 0 for d in moved.values()):
        return "the batch-step model is the start model: make one SgdConfig step from it"
    acc = {k: accumulated[k] - start[k] for k in start}
    if all(np.allclose(acc[k], 4 * moved[k], rtol=1e-3, atol=1e-6) for k in start):
        return ("the accumulated step is 4 times the batch's: the accumulator sums four mean gradients, "
                "so divide the rate by 4")
    for name in start:
        if not np.allclose(accumulated[name], full[name], rtol=0, atol=1e-6):
            return f"the two stepped models differ at {name} (beyond float32 rounding)"
    return None


def _one(value) -> float:
    return float(as_array(value).reshape(-1)[0])


def _evaluate_expected(model, items: list) -> tuple[float, float]:
    batch = MnistBatcher(NdArray.default_device(), NdArray).batch(items)
    logits = model.valid().forward(batch.images).to_numpy().astype(np.float64)
    targets = np.array([item.label for item in items])
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_p[np.arange(len(items)), targets].mean()), float(100.0 * (logits.argmax(1) == targets).mean())


def _evaluate(answer) -> str | None:
    if not isinstance(answer, type) or not callable(getattr(answer, "evaluate", None)):
        raise AnswerError(f"your answer is {describe(answer)}; pass the class SimpleLearner, with its evaluate method")
    B = Autodiff[NdArray]
    B.seed(17)
    model = ModelConfig(num_classes=10, hidden_size=8, dropout=0.5).init(B.default_device())
    rng = np.random.default_rng(17)
    images = [rng.integers(0, 256, (14, 14)).astype(np.float32) for _ in range(13)]
    # Labels: the model's own prediction for the first 8 digits, another class for the rest,
    # so that the accuracy is neither 0 nor 100 % and a fraction cannot pass for a percentage.
    guess = model.valid().forward(MnistBatcher(NdArray.default_device(), NdArray).batch(
        [MnistItem(image, 0) for image in images]).images).to_numpy().argmax(axis=1)
    items = [MnistItem(image, int(g) if i < 8 else int(g + 1) % 10) for i, (image, g) in enumerate(zip(images, guess))]
    learner = call_reader(answer, model, AdamConfig().init(), 1e-3, what="SimpleLearner(model, optim, lr)")
    loader = DataLoaderBuilder(MnistBatcher(NdArray.default_device(), NdArray)).batch_size(5).build(InMemDataset(items))
    got = call_reader(learner.evaluate, loader, what="your evaluate", on="on 13 digits in batches of 5, 5 and 3")
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"your evaluate returned {describe(got)}; return a pair (mean loss, accuracy in %)"
    loss, accuracy = _evaluate_expected(model, items)
    for value, name in ((got[0], "the mean loss"), (got[1], "the accuracy")):
        if as_array(value, name).size != 1:
            return f"{name} is not one number"
    batch_means = []
    for start in range(0, len(items), 5):
        batch_means.append(_evaluate_expected(model, items[start:start + 5]))
    if abs(_one(got[0]) - np.mean([m[0] for m in batch_means])) < 1e-5 and \
            abs(np.mean([m[0] for m in batch_means]) - loss) > 1e-4:
        return "your mean loss is the mean of the batch means; the last batch is smaller: weight by its size"
    if abs(_one(got[1]) - accuracy / 100) < 1e-6 and accuracy:
        return "your accuracy is a fraction; report it in percent"
    return compare([_one(got[0]), _one(got[1])], [loss, accuracy],
                   "your (mean loss, accuracy)", rtol=1e-4, atol=1e-4)


def _head_only(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass two modules (the model before the loop, after it)")
    before, after = _params(answer[0], "the model before"), _params(answer[1], "the model after")
    if before.keys() != after.keys():
        return "the two models do not have the same parameters: pass the guide's model before and after the loop"
    convs = [k for k in before if k.startswith("conv")]
    linears = [k for k in before if k.startswith("linear")]
    if not convs or not linears:
        return "these are not the guide's model (conv1, conv2, ..., linear1, linear2)"
    moved = [k for k in convs if not np.array_equal(before[k], after[k])]
    if moved:
        return f"the convolutions changed ({moved[0]} among {len(moved)}): remove their gradients before each step"
    still = [k for k in linears if np.array_equal(before[k], after[k])]
    if still:
        return f"{still[0]} did not change: the linear layers must train"
    return None


EXERCISES = [
    Exercise("17", 1, "Count the steps", _count,
             expects="four whole numbers (micro-batches, digits in the last one, optimizer steps, digits left "
                     "in the accumulator)",
             hints=("2,000 is not a multiple of 24: the loader's last micro-batch is short.",
                    "A step pops the accumulator after every 5th micro-batch; what comes after the last step stays.")),
    Exercise("17", 2, "Accumulation with SGD", _three_models,
             expects="three modules (start, after the batch-of-64 step, after the accumulated step)",
             hints=("Each quarter's loss is a mean over 16 digits; the accumulator adds the four gradients.",
                    "SGD's step is lr times the gradient: what rate undoes a sum of four means?")),
    Exercise("17", 3, "Validate as you go", _evaluate,
             expects="the class SimpleLearner with its evaluate(loader) method returning (mean loss, accuracy %)",
             hints=("model.valid() puts the model on the inner backend, dropout off.",
                    "Sum each batch's loss times its size and divide by the number of digits; batches can differ "
                    "in size.")),
    Exercise("17", 4, "Train only the head", _head_only,
             expects="two modules (the guide's model before the loop, after it)",
             hints=("GradientsParams files gradients by parameter id; remove() takes one out.",
                    "A parameter without a gradient is left as it is by the optimizer.")),
]
