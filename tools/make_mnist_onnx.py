"""Write the two ONNX files the "Import ONNX Model" chapter imports.

- `notebooks/assets/mnist_cnn.onnx`: a small CNN trained with PyTorch on
  real MNIST digits, seeded, exported with the legacy exporter at opset 17
  with a dynamic batch. It trains on the split burnbook's MNIST loader calls
  `train` under `$BURNBOOK_DATA` and reports its accuracy on the `test`
  split, both stored in the file's metadata. Offline (the `mnist-offline`
  folder) those are images 0-7999 and 8000-9999 of MNIST's published test
  set, so the published set's last 2,000 images (and the last 1,000, which
  the chapter uses) are never trained on, with either data folder.
- `notebooks/assets/squeezenet1_1.onnx`: torchvision's `squeezenet1_1`
  architecture, untrained, exported the same way, *without its weights*.
  Untrained weights are 4.9 MB of random numbers that teach nothing, so the
  file keeps the graph and each initializer's name, type and shape, marked as
  external data in `squeezenet1_1.weights`, a file that is not shipped; the
  chapter draws seeded weights into it before importing.

Needs torch (CPU) and, for the second file, torchvision. torchvision's PyPI
wheel is a CUDA build whose compiled ops do not load beside the CPU torch;
this script never uses `torchvision.ops` and skips its fake-kernel
registrations (`torchvision._meta_registrations`, which fail on those ops),
so any torchvision matching the installed torch works. Run from the
repository root:

    BURNBOOK_DATA=/path/to/data .venv/bin/python tools/make_mnist_onnx.py [mnist|squeezenet ...]
"""

from __future__ import annotations

import sys
import time
import types
import warnings
from pathlib import Path

import numpy as np

ASSETS = Path(__file__).resolve().parents[1] / "notebooks" / "assets"
OPSET = 17
SEED = 2024
EPOCHS = 6
BATCH = 64
LEARNING_RATE = 1e-3
MEAN, STD = 0.1307, 0.3081  # MNIST's pixel mean and deviation, as in the Guide chapter
SQUEEZENET_WEIGHTS = "squeezenet1_1.weights"


def mnist_arrays(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Normalised images [n, 1, 28, 28] (float32) and labels [n] (int64) of an MNIST split."""
    from burnbook.data.dataset.vision import mnist

    images, labels = mnist.load_arrays(*mnist.resolve(split, download_missing=False))
    pixels = (images.astype(np.float32) / 255.0 - MEAN) / STD
    return pixels[:, None, :, :], labels.astype(np.int64)


def mnist_cnn():
    """Two 5x5 convolutions with max pooling, then two linear layers (about 114k
    parameters), with named layers so the ONNX weights read `conv1.weight`, ..."""
    import torch
    from torch import nn

    class MnistCnn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 5, padding=2)   # -> 16 x 28 x 28, pooled to 14 x 14
            self.conv2 = nn.Conv2d(16, 32, 5, padding=2)  # -> 32 x 14 x 14, pooled to 7 x 7
            self.fc1 = nn.Linear(32 * 7 * 7, 64)
            self.fc2 = nn.Linear(64, 10)

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x = torch.max_pool2d(torch.relu(self.conv1(images)), 2)
            x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
            return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))

    return MnistCnn()


def export(model, example, path: Path, input_name: str, output_name: str) -> None:
    """Export `model` with PyTorch's legacy exporter at opset 17, batch dimension dynamic."""
    import torch

    with warnings.catch_warnings():  # the legacy exporter announces its deprecation
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (example,), str(path), dynamo=False, opset_version=OPSET,
            input_names=[input_name], output_names=[output_name],
            dynamic_axes={input_name: {0: "batch"}, output_name: {0: "batch"}},
        )


def make_mnist() -> None:
    import onnx
    import torch

    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    train_x, train_y = (torch.from_numpy(a) for a in mnist_arrays("train"))
    test_x, test_y = (torch.from_numpy(a) for a in mnist_arrays("test"))
    model = mnist_cnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    order = np.random.default_rng(SEED)
    start = time.monotonic()
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.from_numpy(order.permutation(len(train_y)))
        for i in range(0, len(perm), BATCH):
            chosen = perm[i:i + BATCH]
            loss = torch.nn.functional.cross_entropy(model(train_x[chosen]), train_y[chosen])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1}: last batch loss {loss.item():.4f} ({time.monotonic() - start:.0f} s)")
    model.eval()
    with torch.no_grad():
        predicted = torch.cat([model(test_x[i:i + 1000]).argmax(1) for i in range(0, len(test_y), 1000)])
    accuracy = float((predicted == test_y).double().mean())
    print(f"accuracy on {len(test_y)} held-out MNIST test images: {100 * accuracy:.2f} %")

    path = ASSETS / "mnist_cnn.onnx"
    export(model, torch.zeros(1, 1, 28, 28), path, "images", "logits")
    onnx_model = onnx.load(str(path))
    onnx.helper.set_model_props(onnx_model, {
        "test_accuracy": f"{accuracy:.4f} on {len(test_y)} held-out images",
        "trained_by": f"tools/make_mnist_onnx.py: {len(train_y)} images, Adam lr {LEARNING_RATE}, "
                      f"batch {BATCH}, {EPOCHS} epochs, seed {SEED}",
        "input": f"MNIST images [batch, 1, 28, 28], (pixel / 255 - {MEAN}) / {STD}",
    })
    onnx.checker.check_model(onnx_model)
    onnx.save(onnx_model, str(path))
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def import_torchvision():
    """torchvision without its fake kernels for torchvision.ops (which a CUDA
    wheel beside the CPU torch cannot register); nothing here uses those ops."""
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
    with warnings.catch_warnings():  # "failed to load image Python extension"
        warnings.simplefilter("ignore")
        import torchvision
    return torchvision


def make_squeezenet() -> None:
    import onnx
    import torch

    torchvision = import_torchvision()
    torch.manual_seed(SEED)
    model = torchvision.models.squeezenet1_1(weights=None).eval()
    params = sum(p.numel() for p in model.parameters())
    path = ASSETS / "squeezenet1_1.onnx"
    export(model, torch.zeros(1, 3, 224, 224), path, "images", "logits")
    onnx_model = onnx.load(str(path))
    # Keep each initializer's name, type and shape; point its data at a file
    # that is never written (the chapter draws the weights).
    for tensor in onnx_model.graph.initializer:
        tensor.ClearField("raw_data")
        for field in ("float_data", "int64_data", "int32_data", "double_data"):
            tensor.ClearField(field)
        tensor.data_location = onnx.TensorProto.EXTERNAL
        del tensor.external_data[:]
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", SQUEEZENET_WEIGHTS
    onnx_model.doc_string = (
        f"torchvision {torchvision.__version__} squeezenet1_1, untrained, exported at opset {OPSET} "
        f"by tools/make_mnist_onnx.py. Weights ({params} parameters) are not shipped: "
        f"their data is external, in {SQUEEZENET_WEIGHTS}, which whoever loads this file writes.")
    onnx.save(onnx_model, str(path))
    print(f"wrote {path} ({path.stat().st_size} bytes; squeezenet1_1 has {params} parameters, "
          f"{4 * params} bytes as float32, not stored)")


def main(which: list[str]) -> None:
    makers = {"mnist": make_mnist, "squeezenet": make_squeezenet}
    unknown = sorted(set(which) - set(makers))
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; choose from {sorted(makers)}")
    for name in which or list(makers):
        makers[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
