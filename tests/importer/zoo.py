"""The architecture zoo: real model families, exported to ONNX the two ways
PyTorch exports, for the importer's end-to-end tests (issue 16).

`ARCHITECTURES[name]()` builds a seeded model in eval mode and an example
input; `export(name, exporter, dynamic, folder)` writes (once, then reuses)
its ONNX file. Sizes are small (32x32 images, so each CNN's last stage is
1x1; 10 classes; a two-layer ViT) so a whole zoo exports and runs quickly.

torchvision's PyPI wheel for Linux is a CUDA build whose compiled operators
(`torchvision._C`) do not load beside torch's CPU build, and its import then
fails registering fake kernels for `torchvision::nms` and `torchvision::qnms`.
`_torchvision()` defines those two operator schemas first (schemas only, no
kernels: the zoo never calls `torchvision.ops`' compiled operators, only the
pure-Python model definitions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch
from torch import nn

__all__ = ["ARCHITECTURES", "SEQUENCE_MODELS", "EXPORTERS", "export", "build", "example_input"]

EXPORTERS = ("legacy", "dynamo")
NUM_CLASSES = 10
BATCH = 2  # torch.export specializes a size-1 dim to a constant: examples use 2
SEQ = 7

_lib: torch.library.Library | None = None


def _torchvision():
    """The torchvision module, importable beside the CPU torch (see the module docstring)."""
    global _lib
    try:
        import torchvision
        return torchvision
    except RuntimeError as err:
        if "torchvision::nms" not in str(err) or _lib is not None:
            raise
    import sys

    for mod in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[mod]  # the half-imported package
    _lib = torch.library.Library("torchvision", "DEF")  # noqa: TOR901 - schemas only
    _lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    import torchvision
    return torchvision


def _randomize_batchnorm(model: nn.Module) -> nn.Module:
    """Nonzero running statistics and affine parameters, so an importer that
    drops or misreads a BatchNorm fails the comparison."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)
    return model


def _image(size: int = 32, channels: int = 3) -> torch.Tensor:
    return torch.randn(BATCH, channels, size, size, generator=torch.Generator().manual_seed(2))


def _vision(name: str) -> Callable[[], tuple[nn.Module, torch.Tensor]]:
    def make() -> tuple[nn.Module, torch.Tensor]:
        tv = _torchvision()
        torch.manual_seed(0)
        model = getattr(tv.models, name)(weights=None, num_classes=NUM_CLASSES)
        return _randomize_batchnorm(model).eval(), _image()
    return make


def _vit() -> tuple[nn.Module, torch.Tensor]:
    """torchvision's VisionTransformer (class token, learned position
    embedding, nn.MultiheadAttention) at a tiny size."""
    tv = _torchvision()
    torch.manual_seed(0)
    model = tv.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                        hidden_dim=32, mlp_dim=64, num_classes=NUM_CLASSES)
    return model.eval(), _image()


class TransformerClassifier(nn.Module):
    """Linear embedding, a two-layer nn.TransformerEncoder, mean pooling."""

    def __init__(self, features: int = 12, d_model: int = 32) -> None:
        super().__init__()
        self.embed = nn.Linear(features, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, NUM_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(x)).mean(dim=1))


class RecurrentClassifier(nn.Module):
    """A two-layer LSTM or GRU over the sequence; the last step's output classifies."""

    def __init__(self, cell: type, features: int = 12, hidden: int = 24) -> None:
        super().__init__()
        self.rnn = cell(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, NUM_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


class Conv1dNet(nn.Module):
    """Two Conv1d + BatchNorm1d + ReLU stages, global average pooling, a head."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(4, 16, 5, padding=2), nn.BatchNorm1d(16), nn.ReLU(),
            nn.Conv1d(16, 32, 3, stride=2), nn.BatchNorm1d(32), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(),
        )
        self.head = nn.Linear(32, NUM_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class UNetBlock(nn.Module):
    """One U-Net level: convolve, pool, convolve, upsample with
    ConvTranspose2d, concatenate the skip, convolve to a mask."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.mid = nn.Sequential(nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.out = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.down(x)
        y = self.up(self.mid(self.pool(skip)))
        return self.out(torch.cat([y, skip], dim=1))


def _seeded(make: Callable[[], nn.Module], example: Callable[[], torch.Tensor]):
    def build_it() -> tuple[nn.Module, torch.Tensor]:
        torch.manual_seed(0)
        return _randomize_batchnorm(make()).eval(), example()
    return build_it


def _sequence(features: int = 12) -> torch.Tensor:
    return torch.randn(BATCH, SEQ, features, generator=torch.Generator().manual_seed(3))


ARCHITECTURES: dict[str, Callable[[], tuple[nn.Module, torch.Tensor]]] = {
    "resnet18": _vision("resnet18"),
    "mobilenet_v2": _vision("mobilenet_v2"),
    "mobilenet_v3_small": _vision("mobilenet_v3_small"),
    "squeezenet1_1": _vision("squeezenet1_1"),
    "shufflenet_v2_x0_5": _vision("shufflenet_v2_x0_5"),
    "efficientnet_b0": _vision("efficientnet_b0"),
    "vit_tiny": _vit,
    "transformer_encoder": _seeded(TransformerClassifier, _sequence),
    "lstm": _seeded(lambda: RecurrentClassifier(nn.LSTM), _sequence),
    "gru": _seeded(lambda: RecurrentClassifier(nn.GRU), _sequence),
    "mlp_layernorm_gelu": _seeded(
        lambda: nn.Sequential(nn.Linear(20, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 64),
                              nn.LayerNorm(64), nn.GELU(), nn.Linear(64, NUM_CLASSES)),
        lambda: torch.randn(BATCH, 20, generator=torch.Generator().manual_seed(4))),
    "conv1d_batchnorm": _seeded(Conv1dNet,
                                lambda: torch.randn(BATCH, 4, 64, generator=torch.Generator().manual_seed(5))),
    "unet_block": _seeded(UNetBlock, _image),
}

SEQUENCE_MODELS = frozenset({"transformer_encoder", "lstm", "gru"})
"""Exported with a dynamic sequence dim (dim 1) as well as a dynamic batch."""


def build(name: str) -> tuple[nn.Module, torch.Tensor]:
    """The seeded eval-mode model `name` and its example input."""
    return ARCHITECTURES[name]()


def example_input(name: str, batch: int, seq: int | None = None) -> torch.Tensor:
    """An input for `name` with another batch size (and, for a sequence
    model, another length), seeded differently from the export example."""
    _, x = build(name)
    shape = list(x.shape)
    shape[0] = batch
    if seq is not None and name in SEQUENCE_MODELS:
        shape[1] = seq
    return torch.randn(*shape, generator=torch.Generator().manual_seed(100 + batch))


def _out_of_place(model: nn.Module) -> None:
    """Turn in-place activations (torchvision's `ReLU6(inplace=True)`, ...)
    into their out-of-place twins. torch.export functionalizes them into the
    same ONNX graph either way (the same operators, checked for mobilenet_v2,
    shufflenet and efficientnet), but decomposing each in-place call took 6
    of mobilenet_v2's 12 s of export."""
    for module in model.modules():
        if getattr(module, "inplace", False) is True:
            module.inplace = False


def export(name: str, exporter: str, dynamic: bool, folder: Path) -> Path:
    """`folder/<name>-<exporter>-<static|dynamic>.onnx`, exported on the first
    call and reused after. `legacy` is the TorchScript exporter at opset 17,
    `dynamo` the torch.export one at opset 18; `dynamic` makes the batch dim
    (and a sequence model's length) symbolic."""
    if exporter not in EXPORTERS:
        raise ValueError(f"exporter {exporter!r}: expected one of {EXPORTERS}")
    path = Path(folder) / f"{name}-{exporter}-{'dynamic' if dynamic else 'static'}.onnx"
    if path.exists():
        return path
    model, x = build(name)
    if exporter == "dynamo":
        _out_of_place(model)
    axes = {0: "batch", 1: "seq"} if name in SEQUENCE_MODELS else {0: "batch"}
    tmp = path.with_suffix(".onnx.part")
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "legacy":
            # the legacy exporter has no symbolic for nn.TransformerEncoderLayer's fused eval path
            fastpath = torch.backends.mha.get_fastpath_enabled()
            torch.backends.mha.set_fastpath_enabled(False)
            try:
                torch.onnx.export(model, (x,), str(tmp), dynamo=False, opset_version=17,
                                  input_names=["input"], output_names=["output"],
                                  dynamic_axes={"input": axes, "output": {0: "batch"}} if dynamic else None)
            finally:
                torch.backends.mha.set_fastpath_enabled(fastpath)
        else:
            shapes = None
            if dynamic:
                shapes = ({d: torch.export.Dim(n, min=2 if n == "seq" else 1) for d, n in axes.items()},)
            program = torch.onnx.export(model, (x,), dynamo=True, opset_version=18, input_names=["input"],
                                        output_names=["output"], dynamic_shapes=shapes, verbose=False,
                                        external_data=False)
            program.save(str(tmp), external_data=False)
    tmp.replace(path)
    return path
