"""The training dashboard's overhead (issue 6): what the live
`TrainingDashboard` adds to a 1-epoch guide training run in a notebook.

A pair is two runs of the guide's own `train` (its CNN, Adam, accuracy and
loss for training and validation, checkpoints and the saved model, as in
the book) for 1 epoch on 4,096 MNIST digits (1,024 validate), 0 loader
workers, back to back from the same seed: one with the plain notebook
renderer (`NotebookTextRenderer`, what a notebook shows without the
widgets) and one with the dashboard (the order alternates from pair to
pair). One call runs two pairs in the full profile (the harness takes few
samples of calls that last seconds). No browser is needed: the dashboard's
ipywidgets and plotly `FigureWidget` models update without a frontend, and
every widget message is serialised to JSON as a kernel would send it (a
counting comm stands in for the kernel's), so building and packing the
updates is counted. Both runs print their epoch lines to a null stream.

The bar is the ratio of the medians over the pairs (the first, cold, pair
left out) of the dashboard run's time to the plain run's: at most 1.05.
The INFO lines add the time spent inside each renderer's methods (a
measure the machine's load hardly moves). The check: the dashboard run ends
with exactly the weights of the plain run (rendering changes nothing).
The smoke profile (the test suite's) has no such case.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from ..profiles import Profile

FAMILY = "dashboard"
TITLE = "Training dashboard overhead"
INTRO = (
    "`guide_fit_1epoch`: the guide's `train` (CNN, Adam, accuracy and loss, checkpoints) for 1 epoch "
    "on a subset of MNIST (the size column: training digits; a quarter as many validate), 0 data-loader "
    "workers, once with the plain notebook renderer and once with the live `TrainingDashboard` (no "
    "browser: widget messages are serialised to JSON as by a kernel), back to back; the row is the time "
    "of one call (2 such pairs in the full profile). The bar compares the medians of the two runs' "
    "times; the INFO lines give both, the time spent inside the renderers, the widget refreshes and "
    "the bytes the dashboard sent. The check: both runs end with the same weights."
)

FRAMEWORKS = ("autodiff",)
_ITEMS = {"quick": 2048}
# Pairs per call: the harness takes few samples of a call lasting seconds,
# and the bar wants a median over many pairs on this noisy machine.
_PAIRS_PER_CALL = {"full": 2}
BATCH, SEED, LEARNING_RATE = 64, 42, 2e-3

PAIRS: dict = {}         # items -> [(plain seconds, dashboard seconds), ...]
INSIDE: dict = {}        # items -> [(seconds inside the plain renderer, inside the dashboard), ...]
SENT: dict = {}          # items -> (refreshes, bytes) of the latest dashboard run
DATA_SOURCE: dict = {}   # items -> where the digits came from


def items(profile: Profile) -> int:
    return _ITEMS.get(profile.name, 4096)


def case_id(profile: Profile) -> str:
    return f"{FAMILY}/guide_fit_1epoch/{items(profile)}"


class _CountingComm:
    """A comm that does what a kernel's does with each message short of
    sending it: JSON-cleans and serialises it (jupyter_client's packer),
    and counts the bytes."""

    sent_bytes = 0

    @classmethod
    def factory(cls):
        from comm.base_comm import BaseComm

        try:
            from ipykernel.jsonutil import json_clean
            from jupyter_client.session import json_packer
        except ImportError:  # the notebook extras are missing: plain JSON
            json_clean, json_packer = (lambda obj: obj), (lambda obj: json.dumps(obj, default=str).encode())

        class Comm(BaseComm):
            def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
                content = json_clean(dict(data=data or {}, comm_id=self.comm_id, **keys))
                size = len(json_packer(content)) + len(json_packer(json_clean(metadata or {})))
                cls.sent_bytes += size + sum(len(memoryview(b).cast("B")) for b in buffers or ())

        return Comm


@contextlib.contextmanager
def kernel_like_comms():
    """Widgets made inside get `_CountingComm`s (ipywidgets asks `comm.create_comm`)."""
    import comm

    original = comm.create_comm
    counting = _CountingComm.factory()
    comm.create_comm = lambda **kwargs: counting(**kwargs)
    try:
        yield _CountingComm
    finally:
        comm.create_comm = original


def dataset_pair(n: int):
    """`n` training digits and `n // 4` validation digits (distinct ones)."""
    from burnbook.data import PartialDataset

    from .mnist_batches import loader_dataset

    valid = max(n // 4, BATCH)
    data, source = loader_dataset(n + valid)
    DATA_SOURCE[n] = source
    return PartialDataset(data, 0, n), PartialDataset(data, n, n + valid)


class _Timed:
    """A renderer that forwards every call to `inner` and adds up the time
    spent in it: the renderer's own share of a run, free of the machine's
    noise in the run's total."""

    METHODS = ("update_train", "update_valid", "render_train", "render_valid", "on_epoch_end", "on_fit_end")

    def __init__(self, inner, seconds: float = 0.0) -> None:
        self.inner, self.seconds = inner, seconds
        for name in self.METHODS:
            method = getattr(inner, name, None)
            if method is not None:
                setattr(self, name, self._timed(method))

    def _timed(self, method):
        clock = time.perf_counter

        def call(*args):
            start = clock()
            try:
                return method(*args)
            finally:
                self.seconds += clock() - start

        return call


def _weights(model) -> np.ndarray:
    return np.concatenate([p.val().to_numpy().ravel() for p in model.params()]).astype(np.float64)


def _fit(renderer, data, folder: Path):
    from burnbook.examples.guide.model import ModelConfig
    from burnbook.examples.guide.training import TrainingConfig, train
    from burnbook.optim import AdamConfig

    config = TrainingConfig(model=ModelConfig(num_classes=10, hidden_size=512), optimizer=AdamConfig(),
                            num_epochs=1, batch_size=BATCH, num_workers=0, seed=SEED,
                            learning_rate=LEARNING_RATE)
    with contextlib.redirect_stdout(io.StringIO()):
        return train(folder, config, None, dataset_train=data[0], dataset_valid=data[1], renderer=renderer)


def _setup(n: int, per_call: int):
    def setup(fw, ns):
        from burnbook import Tensor
        from burnbook.train.renderer import NotebookTextRenderer
        from burnbook.widgets.dashboard import TrainingDashboard

        TrainingDashboard(display=False).close()   # loads plotly's widget module (once per kernel, ~1-3 s)
        data = dataset_pair(n)
        pairs = PAIRS[n] = []
        inside = INSIDE[n] = []
        root = Path(tempfile.mkdtemp(prefix="bb-dashboard-bench-"))
        clock = time.perf_counter

        def run(kind: str):
            folder = root / kind
            if kind == "plain":
                start = clock()
                timed = _Timed(NotebookTextRenderer())
                model = _fit(timed, data, folder)
                return clock() - start, timed.seconds, model
            with kernel_like_comms() as counter:
                counter.sent_bytes = 0
                start = clock()
                dashboard = TrainingDashboard(display=False)
                timed = _Timed(dashboard, clock() - start)
                model = _fit(timed, data, folder)
                took = clock() - start
                SENT[n] = (dashboard.flushes, counter.sent_bytes)
                dashboard.close()
            return took, timed.seconds, model

        def pair():
            for _ in range(per_call):
                order = ("plain", "dashboard") if len(pairs) % 2 == 0 else ("dashboard", "plain")
                took, spent, models = {}, {}, {}
                for kind in order:
                    took[kind], spent[kind], models[kind] = run(kind)
                pairs.append((took["plain"], took["dashboard"]))
                inside.append((spent["plain"], spent["dashboard"]))
            same = np.array_equal(_weights(models["plain"]), _weights(models["dashboard"]))
            # the dashboard run's weights, or NaN if they differ from the plain run's
            values = _weights(models["dashboard"]) if same else np.full(64, np.nan)
            return Tensor[fw.backend, 1].from_data(values[:64].astype(np.float32), fw.device)

        ns["pair"] = pair

    return setup


def _reference(n: int):
    def setup(fw, ns):
        from burnbook.train.renderer import NotebookTextRenderer

        model = _fit(NotebookTextRenderer(), dataset_pair(n), Path(tempfile.mkdtemp(prefix="bb-dashboard-ref-")))
        values = _weights(model)[:64].astype(np.float32)
        ns["pair"] = lambda: values

    return setup


def run_pairs(n: int) -> list:
    """(plain, dashboard) seconds of the latest run's pairs, less the first (cold) one."""
    return PAIRS.get(n, [])[1:]


def overhead(res) -> float | None:
    """The bar's value: median dashboard time / median plain time."""
    pairs = run_pairs(int(res.case.size))
    if not pairs:
        return None
    return float(np.median([d for _, d in pairs]) / np.median([p for p, _ in pairs]))


def info_lines(res) -> list:
    from ..formatting import fmt_time

    n = int(res.case.size)
    pairs = run_pairs(n)
    if not pairs:
        return []
    plain, dash = float(np.median([p for p, _ in pairs])), float(np.median([d for _, d in pairs]))
    ratios = [d / p for p, d in pairs]
    lines = [f"INFO    guide_fit_1epoch ({n} digits): plain renderer {fmt_time(plain)}, dashboard "
             f"{fmt_time(dash)} (medians of {len(pairs)} back-to-back pairs; per-pair ratios "
             f"{min(ratios):.3f}-{max(ratios):.3f})"]
    spent = INSIDE.get(n, [])[1:]
    if spent:
        own = float(np.median([d for _, d in spent]))
        lines.append(f"INFO    guide_fit_1epoch time inside the renderer's methods: dashboard {fmt_time(own)} "
                     f"per run ({100 * own / plain:.1f}% of the plain run), plain renderer "
                     f"{fmt_time(float(np.median([p for p, _ in spent])))} (medians)")
    if n in SENT:
        refreshes, sent = SENT[n]
        lines.append(f"INFO    guide_fit_1epoch dashboard: {refreshes} widget refreshes, {sent / 1e6:.1f} MB of "
                     "widget messages (plotly's FigureWidget ships its ~5 MB JavaScript bundle once)")
    lines.append(f"INFO    guide_fit_1epoch digits: {DATA_SOURCE.get(n, '?')}")
    return lines


def cases(profile: Profile) -> list:
    """The case, except in the smoke profile (the test suite's: a guide fit
    takes seconds, and its numbers would mean nothing there)."""
    from ..measurement import Case

    if profile.name == "smoke":
        return []
    n = items(profile)
    return [
        Case(FAMILY, "guide_fit_1epoch", str(n), lambda rng: {}, {"*": "pair()"}, ratio="time", tol=0.0,
             frameworks=FRAMEWORKS,
             setup={"numpy": _reference(n), "burnbook": _setup(n, _PAIRS_PER_CALL.get(profile.name, 1))}),
    ]
