"""Training throughput (issue 5): the guide CNN's training step, and the data loader.

`guide_cnn_step`: one full training step of the book's guide CNN on a batch
of MNIST-shaped images `[batch, 28, 28]`: forward (with dropout 0.5, as in
training), cross-entropy loss, backward, and an Adam update of every
parameter. burnbook runs the guide's own `Model`
(`burnbook.examples.guide.model`) on `Autodiff[NdArray]`, `Autodiff[Taichi]` and
`Autodiff[Fusion[Taichi]]`, the way the
Learner does a step: `GradientsParams.from_grads(loss.backward(), model)`,
then `optim.step(lr, model, grads)`. PyTorch runs the same layers in the same
order (`nn.Conv2d`, `nn.Dropout`, `nn.AdaptiveAvgPool2d`, `nn.Linear`,
`F.cross_entropy`, `torch.optim.Adam(eps=1e-5)`, Burn's epsilon). Both start
from the same seeded weights and train on the same seeded batch, step after
step, after two untimed steps (`settle.py`: Adam's second step is the first
of its steady state, where Fusion[Taichi] builds new kernels). The check: before timing, the untrained model's logits in evaluation
mode (no dropout: burnbook's `model.valid()`, PyTorch's `model.eval()`) are
compared with a NumPy forward pass of the same weights, so both sides are
the same model.

`dataloader_workers`: a `DataLoader` (batch 64, shuffled) over 8,000 MNIST
items, with a batcher doing real NumPy work per batch (stack, random
rotation +-15 degrees and shift +-2 px with bilinear sampling, normalisation,
Gaussian noise, all drawn from the loader's `batch_rng()`, then
`Tensor[NdArray, 3]` images and `Tensor[NdArray, 1, Int]` targets); the
consumer touches every batch. One call is a pair of epochs back to back, one
with 0 workers and one with 2 worker processes (the order alternates from
call to call), each timed on its own: the harness interleaves frameworks, not
worker counts, and a load that changes between two separate cases would move
the speed-up, while within a pair both epochs see (nearly) the same machine.
The bar is the median over the pairs (the first, cold, one left out) of
t(0 workers) / t(2 workers). The table row is the time of a whole pair.
The items are real MNIST digits from the data root (`$BURNBOOK_DATA`) when
the files are there, else seeded random 28x28 images (an INFO line says
which). The check: the first pair's item counts and batch checksums equal a
0-worker epoch's. Two busy workers need both cores, so the speed-up is the
most load-sensitive number of the run; at the case's start a scaling probe
times the batcher's work in one process and split over two forked processes
side by side (on this 2-vCPU VM that ceiling moves between ~1.4x and ~1.8x
with the host's load, which no process inside the VM sees), and the INFO
lines give it with other processes' CPU share and the steal time.
"""

from __future__ import annotations

import functools
import os
import time

import numpy as np

from ..contention import Contention, scaling_probe
from ..measurement import UNIT_SCALE, Case
from ..profiles import Profile
from .mnist_batches import LOADER_BATCH, LOADER_SEED, AugmentingMnistBatcher, loader_dataset, probe_work
from .settle import settle

FAMILY = "training"
TITLE = "Training throughput"
INTRO = (
    "`guide_cnn_step`: one training step of the guide's CNN (conv 1->8 3x3, "
    "dropout, conv 8->16 3x3, dropout, ReLU, adaptive average pool to 8x8, "
    "linear 1024->512, dropout, ReLU, linear 512->10; dropout 0.5) on a batch of "
    "28x28 images: forward, cross-entropy, backward and an Adam update, from the "
    "same seeded weights and batch on every framework; images/s, higher is "
    "better. `(1 thread)` rows: NumPy's BLAS and PyTorch on one thread for that "
    "framework's runs (the bar uses them). The check compares the untrained "
    "model's evaluation-mode logits with a NumPy forward pass. "
    "`dataloader_workers`: a data loader (batch 64) whose batcher normalises, "
    "randomly rotates and shifts (from the loader's `batch_rng()`) and stacks "
    "MNIST items into NdArray tensors; one call is an epoch with no workers and "
    "one with 2 worker processes, back to back (the row is the pair's time; the "
    "INFO lines under Bars give each epoch's time, the speed-up as the median of "
    "the pairs, where the items came from, and the machine's contention)."
)

# Images/s (the CNN case's unit): one call's work is its number of images.
UNIT_SCALE.setdefault("images/s", 1.0)

# autodiff_fusion_1t: its BLAS matmuls on one thread and Taichi's kernels run
# serially (frameworks.single_thread), beside the bar's default-thread row, to show
# what stalled 2-thread calls cost it on a busy machine.
CNN_FRAMEWORKS = ("autodiff", "autodiff_taichi", "autodiff_fusion", "torch", "autodiff_1t", "autodiff_fusion_1t",
                  "torch_1t")
LOADER_FRAMEWORKS = ("ndarray",)
LOADER_WORKERS = (0, 2)
LEARNING_RATE = 1e-3
EPSILON = 1e-5          # Burn's Adam epsilon (PyTorch's default is 1e-8)
HIDDEN, CLASSES, DROPOUT = 512, 10, 0.5

# Per profile: the CNN's batch and the items of one loader epoch.
_CNN_BATCH = {"smoke": 4}
_LOADER_ITEMS = {"smoke": 256}
# (path in the burnbook model, input name, shape, fan-in of its layer)
PARAMS = (
    ("conv1.weight", "conv1_weight", (8, 1, 3, 3), 9), ("conv1.bias", "conv1_bias", (8,), 9),
    ("conv2.weight", "conv2_weight", (16, 8, 3, 3), 72), ("conv2.bias", "conv2_bias", (16,), 72),
    ("linear1.weight", "linear1_weight", (1024, HIDDEN), 1024), ("linear1.bias", "linear1_bias", (HIDDEN,), 1024),
    ("linear2.weight", "linear2_weight", (HIDDEN, CLASSES), HIDDEN),
    ("linear2.bias", "linear2_bias", (CLASSES,), HIDDEN),
)


def cnn_batch(profile: Profile) -> int:
    return _CNN_BATCH.get(profile.name, 64)


def cnn_case_id(profile: Profile) -> str:
    return f"{FAMILY}/guide_cnn_step/{cnn_batch(profile)}"


def loader_items(profile: Profile) -> int:
    return _LOADER_ITEMS.get(profile.name, 8000)


def loader_case_id(profile: Profile) -> str:
    return f"{FAMILY}/dataloader_workers/{loader_items(profile)}"


# -- the guide CNN ------------------------------------------------------------------------
def _cnn_inputs(batch: int):
    def make(rng):
        out = {"images": rng.standard_normal((batch, 28, 28)).astype(np.float32),
               # class ids as floats (every input becomes a float tensor); setup makes them ints
               "labels": rng.integers(0, CLASSES, batch).astype(np.float32)}
        for _, name, shape, fan_in in PARAMS:
            # PyTorch's default init, uniform(+-1/sqrt(fan_in)); Linear weights are
            # [d_in, d_out] (Burn's layout), conv weights [out, in, kh, kw].
            bound = 1.0 / np.sqrt(fan_in)
            out[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
        return out

    return make


def guide_model_config():
    """The guide's `ModelConfig`, and its name for the INFO line."""
    from burnbook.examples.guide.model import ModelConfig

    return ModelConfig(num_classes=CLASSES, hidden_size=HIDDEN, dropout=DROPOUT), \
        "burnbook.examples.guide.model.Model"


MODEL_SOURCE: list = []   # what the last burnbook setup trained (for the INFO line)


def _cnn_burnbook(fw, ns):
    from burnbook import Int, Tensor, nn
    from burnbook.optim import AdamConfig, GradientsParams

    backend, device = fw.backend, fw.device
    config, source = guide_model_config()
    MODEL_SOURCE[:] = [source]
    values = {path: ns[name] for path, name, _, _ in PARAMS}
    model0 = config.init(device, backend).map_params(lambda path, p: p.with_value(values[path]))
    images = ns["images"]
    labels = np.rint(ns["labels"].to_numpy()).astype(np.int64)
    targets = Tensor[backend, 1, Int].from_data(labels, device)
    loss_fn = nn.CrossEntropyLoss.new(None)
    optim = AdamConfig(epsilon=EPSILON).init()
    state = {"model": model0}

    def step():
        model = state["model"]
        loss = loss_fn.forward(model(images), targets)
        grads = GradientsParams.from_grads(loss.backward(), model)
        state["model"] = optim.step(LEARNING_RATE, model, grads)
        return loss

    def probe():
        return model0.valid()(images.inner() if backend.is_autodiff else images)

    ns["step"], ns["probe"] = step, probe
    settle(fw, step)


def _cnn_torch(fw, ns):
    import copy

    torch = ns["torch"]
    tnn = torch.nn

    class Guide(tnn.Module):
        """The guide's CNN, layer for layer as `burnbook.examples.guide.model`."""

        def __init__(self):
            super().__init__()
            self.conv1 = tnn.Conv2d(1, 8, 3)
            self.conv2 = tnn.Conv2d(8, 16, 3)
            self.pool = tnn.AdaptiveAvgPool2d((8, 8))
            self.dropout = tnn.Dropout(DROPOUT)
            self.linear1 = tnn.Linear(16 * 8 * 8, HIDDEN)
            self.linear2 = tnn.Linear(HIDDEN, CLASSES)
            self.activation = tnn.ReLU()

        def forward(self, images):
            n, h, w = images.shape
            x = self.dropout(self.conv1(images.reshape(n, 1, h, w)))
            x = self.activation(self.dropout(self.conv2(x)))
            x = self.pool(x).reshape(n, 16 * 8 * 8)
            x = self.activation(self.dropout(self.linear1(x)))
            return self.linear2(x)

    model = Guide()
    params = dict(model.named_parameters())
    with torch.no_grad():
        for path, name, _, _ in PARAMS:
            value = ns[name]
            if path.startswith("linear") and path.endswith("weight"):
                value = value.T   # torch's Linear weight is [d_out, d_in]
            params[path].copy_(value)
    model0 = copy.deepcopy(model).eval()
    model.train()
    images, targets = ns["images"], ns["labels"].round().long()
    optim = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE, eps=EPSILON)
    cross_entropy = torch.nn.functional.cross_entropy

    def step():
        optim.zero_grad(set_to_none=True)
        loss = cross_entropy(model(images), targets)
        loss.backward()
        optim.step()
        return loss

    def probe():
        with torch.no_grad():
            return model0(images)

    ns["step"], ns["probe"] = step, probe
    settle(fw, step)


def _cnn_numpy(fw, ns):
    """The reference: the evaluation-mode forward pass, written in NumPy."""
    from numpy.lib.stride_tricks import sliding_window_view

    def conv(x, w, b):
        windows = sliding_window_view(x, (3, 3), axis=(2, 3))     # [n, c, h-2, w-2, 3, 3]
        return np.einsum("nchwij,ocij->nohw", windows, w, optimize=True) + b[None, :, None, None]

    def probe():
        x = ns["images"][:, None].astype(np.float64)
        x = conv(conv(x, ns["conv1_weight"], ns["conv1_bias"]), ns["conv2_weight"], ns["conv2_bias"])
        x = np.maximum(x, 0)
        n = x.shape[0]
        x = x.reshape(n, 16, 8, 3, 8, 3).mean(axis=(3, 5)).reshape(n, 16 * 8 * 8)   # 24 -> 8
        x = np.maximum(x @ ns["linear1_weight"] + ns["linear1_bias"], 0)
        return x @ ns["linear2_weight"] + ns["linear2_bias"]

    ns["probe"] = probe


# -- the data loader ----------------------------------------------------------------------
_REFERENCE: dict = {}


CONTENTION: dict = {}     # items -> Contention over the latest run of the loader case
SCALING: dict = {}        # items -> scaling_probe() at the loader case's set-up
PAIRS: dict = {}          # items -> [(seconds of a 0-worker epoch, of a 2-worker epoch), ...]
DATA_SOURCE: dict = {}    # items -> where the items came from
_PROBE_BATCHES = {"smoke": 2}


def contention_line(items: int) -> str:
    """The scaling probe at the loader case's set-up, other processes' CPU
    share and the steal time while it ran, and the load average."""
    bits = []
    scaling = SCALING.get(items)
    if scaling is not None:
        bits.append(f"two processes building these batches side by side run {scaling:.2f}x as fast as one "
                    "(the ceiling for 2 workers, measured at the case's start)")
    meter = CONTENTION.get(items)
    shares = meter.percents() if meter is not None else None
    if shares is not None:
        bits.append(f"other processes used {shares[0]:.0f}% and the hypervisor stole {shares[1]:.0f}% of the "
                    f"{os.cpu_count()} cores over the case's {meter.end[0] - meter.start[0]:.0f} s")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return "; ".join(bits + [f"load average {load}"])


def loader_pairs(items: int) -> list:
    """The (0-worker, 2-worker) epoch times of the latest run, less the first
    (cold) pair."""
    return PAIRS.get(items, [])[1:]


def loader_speedup(res) -> float | None:
    """The bar's value: the median over back-to-back pairs of (0-worker epoch
    time / 2-worker epoch time) of the loader case `res`."""
    pairs = loader_pairs(int(res.case.size))
    if not pairs:
        return None
    return float(np.median([t0 / t2 for t0, t2 in pairs if t2 > 0]))


def _make_loader(dataset, workers: int):
    from burnbook.data import DataLoaderBuilder

    return (DataLoaderBuilder(AugmentingMnistBatcher()).batch_size(LOADER_BATCH).shuffle(LOADER_SEED)
            .num_workers(workers).build(dataset))


def _run_epoch(loader) -> np.ndarray:
    """One epoch; the consumer reads every batch. Returns [items, checksum]."""
    count, checksum = 0, 0.0
    for images, targets in loader:
        values = images.to_numpy()
        count += values.shape[0]
        checksum += float(values[:, 14, 14].sum()) + float(targets.to_numpy().sum())
    return np.array([count, checksum])


def _reference_pair(items: int) -> np.ndarray:
    """Epoch 0 of a 0-worker loader, twice: what the first pair must give."""
    if items not in _REFERENCE:
        _REFERENCE[items] = _run_epoch(_make_loader(loader_dataset(items)[0], 0))
    return np.concatenate([_REFERENCE[items], _REFERENCE[items]])


def _loader_setup(items: int, probe_batches: int):
    def setup(fw, ns):
        from burnbook import Tensor

        dataset, source = loader_dataset(items)
        DATA_SOURCE[items] = source
        SCALING[items] = scaling_probe(functools.partial(probe_work, dataset), probe_batches)
        meter = CONTENTION[items] = Contention()
        pairs = PAIRS[items] = []
        loaders = {w: _make_loader(dataset, w) for w in LOADER_WORKERS}
        backend, device = fw.backend, fw.device
        clock = time.perf_counter

        def pair():
            """An epoch with 0 workers and one with 2, back to back (the order
            alternates from call to call); records both times."""
            order = LOADER_WORKERS if len(pairs) % 2 == 0 else LOADER_WORKERS[::-1]
            out, took = {}, {}
            for w in order:
                t = clock()
                out[w] = _run_epoch(loaders[w])
                took[w] = clock() - t
            pairs.append((took[0], took[2]))
            meter.mark()
            return Tensor[backend, 1].from_data(np.concatenate([out[0], out[2]]), device)

        ns["pair"] = pair

    return setup


def _loader_numpy(items: int):
    def setup(fw, ns):
        ns["pair"] = lambda: _reference_pair(items)

    return setup


def cases(profile: Profile) -> list:
    batch = cnn_batch(profile)
    items = loader_items(profile)
    return [
        Case(FAMILY, "guide_cnn_step", str(batch), _cnn_inputs(batch), {"*": "step()"},
             work=batch, unit="images/s", ratio="speed",
             setup={"numpy": _cnn_numpy, "burnbook": _cnn_burnbook, "torch": _cnn_torch},
             check="probe()", tol=1e-4, frameworks=CNN_FRAMEWORKS),
        # The time of a pair (an epoch with 0 workers + one with 2); the
        # speed-up comes from the pairs' own timings (`loader_speedup`).
        Case(FAMILY, "dataloader_workers", str(items), lambda rng: {}, {"*": "pair()"},
             ratio="time", tol=1e-6, frameworks=LOADER_FRAMEWORKS,
             setup={"numpy": _loader_numpy(items),
                    "burnbook": _loader_setup(items, _PROBE_BATCHES.get(profile.name, 32))}),
    ]
