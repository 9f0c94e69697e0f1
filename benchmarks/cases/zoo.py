"""Imported models (issue 16): the ONNX zoo's forward pass on NdArray against onnxruntime.

Every architecture of `tests/importer/zoo.py` is exported once (the legacy
TorchScript exporter, dynamic batch; cached under burnbook's cache folder,
`zoo-onnx/<hash of zoo.py>/`), imported with `build_model` on `NdArray`, and its
forward pass (`model(x)`, replayed after its first two calls: see
`burnbook/module/replay.py`) timed beside an onnxruntime `InferenceSession`
of the same file. The torchvision ImageNet CNNs run at the size they are used at,
3x224x224, batch 1 (one image: the user-facing latency; the zoo's 32x32 test
images would time Python's per-operator overhead, not the model); the other
architectures at their zoo sizes, batch 1 and 8. Both run on one thread (`intra_op_num_threads = 1`; NumPy's BLAS set to
one thread around NdArray's runs). The check compares burnbook's
output with onnxruntime's. An architecture that fails to export or import
is reported as an error on its row, never dropped.

The bars (issue 16) are on the ratios burnbook time / onnxruntime time over
every architecture that ran: the median ratio and the worst one
(`median_ratio`, `worst_ratio`).
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import numpy as np

from ..measurement import Case
from ..profiles import Profile

FAMILY = "zoo"
TITLE = "Imported models: ONNX zoo forward pass, burnbook NdArray vs onnxruntime"
INTRO = (
    "Each architecture of the importer's zoo (`tests/importer/zoo.py`: torchvision CNNs, "
    "a tiny ViT, a TransformerEncoder, LSTM/GRU, an MLP, a conv1d net, a U-Net block), "
    "exported to ONNX with a dynamic batch, imported with `build_model` on NdArray, and its "
    "forward pass timed beside onnxruntime's session of the same file, both on one thread "
    "(the torchvision CNNs on one 3x224x224 image, `batch1-224`, the size they are used at; the others "
    "at the zoo's test sizes, 32x32 images or 7-step sequences, batch 1 and 8) "
    "(`ndarray_1t`: NumPy's BLAS on 1 thread; `onnxruntime_1t`: `intra_op_num_threads = 1`). "
    "burnbook's forward pass is `model(x)`, which on NdArray replays the NumPy calls recorded "
    "on the first call (README, 'Importing ONNX models'); the two calls that record and check "
    "it run before the timing. "
    "Time per forward pass; the ratio is burnbook's time / onnxruntime's (lower is better)."
)

# The one-thread pair: on the shared 2-core machine a 2-thread BLAS call
# stalls for whole scheduler ticks under load (a batch-1 squeezenet took
# 280 ms instead of 9), so the default-thread pair compares the neighbours.
FRAMEWORKS = ("onnxruntime_1t", "ndarray_1t")
FW, REF = "ndarray_1t", "onnxruntime_1t"
BATCHES = (1, 8)
IMAGE_SIZE = 224          # the torchvision CNNs' real input size (ImageNet)
IMAGE_BATCHES = (1,)
VISION = frozenset({"resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1",
                    "shufflenet_v2_x0_5", "efficientnet_b0"})
QUICK_ARCHITECTURES = ("mobilenet_v2", "shufflenet_v2_x0_5", "resnet18", "lstm")
_ROOT = Path(__file__).resolve().parents[2]
_cache: dict = {}   # architecture -> (onnx path, input name) | Exception


def _zoo():
    """The zoo module (the tests' folder holds it; importing it loads torch)."""
    if str(_ROOT) not in sys.path:
        sys.path.insert(0, str(_ROOT))
    from tests.importer import zoo

    return zoo


def architectures(profile: Profile) -> tuple:
    if profile.name == "quick":
        return QUICK_ARCHITECTURES
    try:
        return tuple(_zoo().ARCHITECTURES)
    except Exception:  # noqa: BLE001 - torch/torchvision missing: the rows say so at setup
        return QUICK_ARCHITECTURES


def _folder() -> Path:
    """`zoo-onnx/<hash>/` in burnbook's cache folder (the rule of Taichi's
    `settings.cache_root()`, without importing Taichi for it). The hash is
    of zoo.py's text and torch's version: an edited zoo exports afresh."""
    import zlib

    import torch

    env = os.environ.get("BURNBOOK_CACHE")
    root = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "burnbook"
    source = (_ROOT / "tests" / "importer" / "zoo.py").read_bytes() + torch.__version__.encode()
    folder = root / "zoo-onnx" / f"{zlib.crc32(source):08x}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _export_image(name: str, folder: Path) -> Path:
    """`name` (a torchvision CNN of the zoo) exported with a 3x224x224 input
    and a dynamic batch, as the zoo's legacy exporter does at its test size."""
    import warnings

    import torch

    path = folder / f"{name}-legacy-dynamic-{IMAGE_SIZE}.onnx"
    if path.exists():
        return path
    model, x = _zoo().build(name)
    x = torch.randn(x.shape[0], 3, IMAGE_SIZE, IMAGE_SIZE, generator=torch.Generator().manual_seed(2))
    tmp = path.with_suffix(".onnx.part")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(tmp), dynamo=False, opset_version=17, input_names=["input"],
                          output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    tmp.replace(path)
    return path


def _exported(name: str) -> Path:
    """The architecture's ONNX file (exported once, then cached); a failure is kept."""
    if name not in _cache:
        try:
            if name in VISION:
                _cache[name] = _export_image(name, _folder())
            else:
                _cache[name] = _zoo().export(name, "legacy", True, _folder())
        except Exception as exc:  # noqa: BLE001 - kept and re-raised in every setup of this row
            _cache[name] = exc
    got = _cache[name]
    if isinstance(got, Exception):
        raise got
    return got


def _inputs(name: str, batch: int):
    def make(rng: np.random.Generator) -> dict:
        if name in VISION:
            return {"x": rng.standard_normal((batch, 3, IMAGE_SIZE, IMAGE_SIZE)).astype(np.float32)}
        return {"x": _zoo().example_input(name, batch).numpy()}
    return make


def _sizes(name: str) -> list:
    """(case size label, batch) rows of `name`."""
    if name in VISION:
        return [(f"batch{b}-{IMAGE_SIZE}", b) for b in IMAGE_BATCHES]
    return [(f"batch{b}", b) for b in BATCHES]


def _session(path: Path, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def _setup_ort(name: str):
    def setup(fw, ns):
        session = _session(_exported(name), fw.threads or 1)
        feed = {session.get_inputs()[0].name: np.asarray(ns["x"], dtype=np.float32)}
        ns["forward"] = lambda: session.run(None, feed)[0]
    return setup


def _setup_burnbook(name: str):
    def setup(fw, ns):
        from burnbook.importer.onnx import build_model

        model = build_model(_exported(name), backend=fw.backend)
        x = ns["x"]
        model(x)   # recorded (module/replay.py)
        model(x)   # the replay checked against the eager pass; later calls replay
        ns["forward"] = lambda: model(x)
    return setup


def cases(profile: Profile) -> list:
    """One case per architecture and batch; none in the smoke profile (the
    test suite's: exporting the zoo takes a minute)."""
    if profile.name == "smoke":
        return []
    return [
        Case(FAMILY, name, size, _inputs(name, batch), {"*": "forward()"}, ratio="time",
             tol=1e-3, frameworks=FRAMEWORKS,
             setup={"numpy": _setup_ort(name), "onnxruntime": _setup_ort(name), "burnbook": _setup_burnbook(name)})
        for name in architectures(profile) for size, batch in _sizes(name)
    ]


def anchor_case_id(profile: Profile) -> str:
    """A zoo case id every non-smoke profile runs (where the bars are listed)."""
    name = architectures(profile)[0]
    return f"{FAMILY}/{name}/{_sizes(name)[0][0]}"


def _ratios(results: list) -> tuple[dict, list]:
    """{case id: burnbook time / onnxruntime time} and the rows that failed."""
    ratios, failed = {}, []
    for res in results:
        if res.case.family != FAMILY:
            continue
        r = res.ratio(FW, REF)
        if r is None:
            errors = [f"{k}: {e.error}" for k, e in res.entries.items() if not e.ok]
            failed.append(f"{res.case.op}/{res.case.size} ({'; '.join(errors) or 'no result'})")
        elif res.entries[FW].check.startswith("MISMATCH"):
            failed.append(f"{res.case.op}/{res.case.size} ({res.entries[FW].check})")
        else:
            ratios[f"{res.case.op}/{res.case.size}"] = r
    return ratios, failed


def median_ratio(results: list) -> tuple[float | None, str]:
    ratios, failed = _ratios(results)
    note = f"{len(ratios)} rows" + (f"; failed: {', '.join(failed)}" if failed else "")
    return (statistics.median(ratios.values()) if ratios else None), note


def worst_ratio(results: list) -> tuple[float | None, str]:
    ratios, failed = _ratios(results)
    if not ratios:
        return None, "no zoo row ran"
    worst = max(ratios, key=ratios.get)
    return ratios[worst], f"{worst}" + (f"; {len(failed)} rows failed" if failed else "")


def info_lines(results: list) -> list:
    ratios, failed = _ratios(results)
    lines = [f"INFO    zoo {k}: NdArray {v:.2f}x onnxruntime's time (1 thread each)" for k, v in sorted(ratios.items(),
                                                                              key=lambda kv: -kv[1])]
    lines += [f"INFO    zoo {row}: not measured" for row in failed]
    return lines
