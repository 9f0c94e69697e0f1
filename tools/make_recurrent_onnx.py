"""Write the PyTorch recurrent classifiers tests/importer/test_onnx_recurrent.py imports.

Each file is a tiny seeded `nn.LSTM` or `nn.GRU` classifier (batch first,
input 4, hidden 8, a `Linear` head on the last step, which also returns the
final hidden state), exported twice: by the TorchScript exporter
(`dynamo=False`, opset 17) and by the dynamo exporter (`dynamo=True`,
opset 18, which needs onnxscript). Exporting takes far longer than the
tests may, so the files are stored in tests/importer/assets/recurrent/.
Variants (the file name says which): one or two layers, one direction or
both, with the initial state as model inputs or not, and fixed or dynamic
dims: batch and sequence for the TorchScript exporter, batch alone for the
dynamo one (torch.export unrolls `nn.LSTM`/`nn.GRU` over the steps, so it
fixes the sequence length whatever `dynamic_shapes` asks). Run from the
repository root:

    .venv/bin/python tools/make_recurrent_onnx.py
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import onnx
import torch

OUT = Path(__file__).resolve().parents[1] / "tests" / "importer" / "assets" / "recurrent"
D_INPUT, HIDDEN, CLASSES = 4, 8, 3

# (layers, bidirectional, initial state as inputs, dynamic dims)
VARIANTS = [(1, False, True, False), (2, True, False, True), (1, True, True, True)]


class Classifier(torch.nn.Module):
    """A recurrent layer and a linear head on its last step's output."""

    def __init__(self, cell: str, layers: int, bidirectional: bool) -> None:
        super().__init__()
        rnn = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        self.cell = cell
        self.rnn = rnn(D_INPUT, HIDDEN, num_layers=layers, batch_first=True, bidirectional=bidirectional)
        self.head = torch.nn.Linear(HIDDEN * (2 if bidirectional else 1), CLASSES)

    def forward(self, x: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.cell == "lstm":
            y, (h, _) = self.rnn(x, tuple(state) if state else None)
        else:
            y, h = self.rnn(x, state[0] if state else None)
        return self.head(y[:, -1]), h


def name_of(cell: str, layers: int, bidirectional: bool, with_state: bool, dynamic: bool, dynamo: bool) -> str:
    parts = [cell, f"l{layers}", "bi" if bidirectional else "uni", "state" if with_state else "nostate",
             "dynamic" if dynamic else "static", "dynamo" if dynamo else "script"]
    return "_".join(parts) + ".onnx"


def export(cell: str, layers: int, bidirectional: bool, with_state: bool, dynamic: bool, dynamo: bool) -> bytes:
    torch.manual_seed(layers * 10 + bidirectional * 3 + with_state)
    model = Classifier(cell, layers, bidirectional).eval()
    batch, steps = 2, 5
    args = [torch.randn(batch, steps, D_INPUT)]
    names = ["x"]
    if with_state:
        dirs = 2 if bidirectional else 1
        args += [torch.randn(layers * dirs, batch, HIDDEN) for _ in range(2 if cell == "lstm" else 1)]
        names += ["h0", "c0"][:len(args) - 1]
    if dynamo:
        dims = None
        if dynamic:
            b, s = torch.export.Dim("batch", min=1), torch.export.Dim("seq", min=2)
            dims = ({0: b, 1: s},)
            if len(args) > 1:  # the *state tuple, when there is one
                dims += (tuple({1: b} for _ in args[1:]),)
        program = torch.onnx.export(model, tuple(args), dynamo=True, opset_version=18, input_names=names,
                                    dynamic_shapes=dims, verbose=False)
        proto = program.model_proto
        for node in proto.graph.node:  # the exporter's per-node stack traces: most of the file otherwise
            del node.metadata_props[:]
        for info in proto.graph.value_info:
            del info.metadata_props[:]
        return proto.SerializeToString()
    f = io.BytesIO()
    axes = ({"x": {0: "batch", 1: "seq"}} | {n: {1: "batch"} for n in names[1:]}) if dynamic else None
    torch.onnx.export(model, tuple(args), f, dynamo=False, opset_version=17, input_names=names,
                      output_names=["logits", "h_n"], dynamic_axes=axes)
    return f.getvalue()


def main() -> None:
    warnings.simplefilter("ignore")
    OUT.mkdir(parents=True, exist_ok=True)
    for dynamo in (False, True):
        for cell in ("lstm", "gru"):
            for variant in VARIANTS:
                name = name_of(cell, *variant, dynamo)
                data = export(cell, *variant, dynamo)
                onnx.checker.check_model(onnx.load_from_string(data))
                (OUT / name).write_bytes(data)
                print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
