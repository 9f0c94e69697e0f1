"""Write the PyTorch files that the "PyTorch Model" chapter reads when torch
is not installed (notebooks/assets/).

The chapter makes these same files with torch when it can; without torch it
copies them from the assets folder, and compares against the outputs
PyTorch gave, stored in `pytorch-outputs.safetensors`. The models, seeds and
inputs below are the chapter's, so both paths print the same thing
(tests/importer/test_pytorch_chapter.py checks that). Needs torch and the
safetensors package:

    .venv/bin/python tools/make_sample_pt.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

ASSETS = Path(__file__).resolve().parents[1] / "notebooks" / "assets"


class TorchNet(torch.nn.Module):
    """The Burn Book's example: two 2x2 convolutions, the second without bias."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(2, 2, (2, 2))
        self.conv2 = torch.nn.Conv2d(2, 2, (2, 2), bias=False)

    def forward(self, x):
        return self.conv2(self.conv1(x))


class TorchWrapped(torch.nn.Module):
    """The same convolutions one level down, under `conv` (the remap example)."""

    def __init__(self):
        super().__init__()
        self.conv = TorchNet()

    def forward(self, x):
        return self.conv(x)


class TorchEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class TorchDecoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 8)

    def forward(self, z):
        return self.fc(z)


class TorchAutoencoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = TorchEncoder()
        self.decoder = TorchDecoder()

    def forward(self, x):
        return self.decoder(self.encoder(x))


def inputs() -> dict[str, np.ndarray]:
    """The chapter's inputs, from NumPy generators with fixed seeds."""
    return {
        "image": np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32),
        "features": np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32),
        "signal": np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32),
    }


def mlp() -> torch.nn.Module:
    """nn.Sequential with a BatchNorm whose running statistics have moved."""
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 3))
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(32, 4) * 2 + 1)
    return model.eval()


def build(folder: Path) -> dict[str, np.ndarray]:
    """Save every model's state_dict into `folder`; returns PyTorch's outputs."""
    x = {k: torch.from_numpy(v) for k, v in inputs().items()}
    outputs = {}
    with torch.no_grad():
        torch.manual_seed(42)
        net = TorchNet().eval()
        torch.save(net.state_dict(), folder / "conv2d.pt")
        save_file(net.state_dict(), folder / "conv2d.safetensors")
        outputs["conv2d"] = net(x["image"]).numpy()

        torch.manual_seed(1)
        wrapped = TorchWrapped().eval()
        torch.save(wrapped.state_dict(), folder / "key_remap.pt")
        outputs["key_remap"] = wrapped(x["image"]).numpy()

        sequential = mlp()
        torch.save(sequential.state_dict(), folder / "mlp.pt")
        outputs["mlp"] = sequential(x["features"]).numpy()

        torch.manual_seed(3)
        autoencoder = TorchAutoencoder().eval()
        torch.save(autoencoder.state_dict(), folder / "autoencoder.pt")
        outputs["encoder"] = autoencoder.encoder(x["signal"]).numpy()
    return outputs


def main() -> None:
    ASSETS.mkdir(parents=True, exist_ok=True)
    outputs = build(ASSETS)
    save_file({k: torch.from_numpy(v) for k, v in outputs.items()}, ASSETS / "pytorch-outputs.safetensors")
    for path in sorted(ASSETS.glob("*")):
        if path.suffix in (".pt", ".safetensors"):
            print(f"{path.name:30} {path.stat().st_size:6} bytes", file=sys.stdout)


if __name__ == "__main__":
    main()
