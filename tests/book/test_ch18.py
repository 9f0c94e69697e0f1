"""Chapter 18's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

import base64

from burnbook import nn
from burnbook.backend import NdArray
from burnbook.book import exercises
from burnbook.module import Module
from burnbook.record import BinBytesRecorder, FullPrecisionSettings

ex = exercises("18")


def test_predict_the_error():
    assert ex[1].verdict({"linear_in.weight": ([10, 64], [12, 64])}).ok
    both = {"linear_in.weight": ([10, 64], [12, 64]), "linear_in.bias": ([64], [64])}
    assert "bias" in ex[1].verdict(both).message
    assert "swapped" in ex[1].verdict({"linear_in.weight": ([12, 64], [10, 64])}).message
    assert "transpose" in ex[1].verdict({"linear_in.weight": ([64, 10], [64, 12])}).message
    assert "pass a dict" in ex[1].verdict(["linear_in.weight"]).message


def test_save_small():
    params = 10 * 64 + 64 + 64 * 2 + 2
    assert ex[2].verdict((3818 - 2 * params, 1.2e-4)).ok
    assert "only the values shrink" in ex[2].verdict((3818 // 2, 1.2e-4)).message
    assert "exactly 0" in ex[2].verdict((3818 - 2 * params, 0.0)).message
    assert "f16 rounding" in ex[2].verdict((3818 - 2 * params, 0.05)).message
    assert "not the full file less" in ex[2].verdict((3818 - 4 * params, 1e-4)).message


class Model(Module):
    linear_in: nn.Linear
    linear_out: nn.Linear
    activation: nn.Relu

    def forward(self, x):
        return self.linear_out(self.activation(self.linear_in(x)))


def model(d_out=2):
    NdArray.seed(18)
    device = NdArray.default_device()
    return Model(linear_in=nn.LinearConfig(10, 64).init(device), linear_out=nn.LinearConfig(64, d_out).init(device),
                 activation=nn.Relu())


def test_embed_as_text():
    blob = BinBytesRecorder(FullPrecisionSettings).record(model().into_record(), None)
    encoded = base64.b64encode(blob).decode("ascii")
    assert ex[3].verdict(f"import base64\nMODEL_BYTES = base64.b64decode({encoded!r})\n").ok
    assert "repr's size" in ex[3].verdict(f"MODEL_BYTES = {blob!r}\n").message
    unnamed = f"import base64\nDATA = base64.b64decode({encoded!r})\n"
    assert "does not set MODEL_BYTES" in ex[3].verdict(unnamed).message
    damaged = base64.b64encode(blob[8:]).decode("ascii")
    assert "not a record" in ex[3].verdict(f"import base64\nMODEL_BYTES = base64.b64decode({damaged!r})\n").message
    assert "raised SyntaxError" in ex[3].verdict("MODEL_BYTES = (").message


def test_new_head():
    saved = model()
    head = nn.LinearConfig(64, 3).init(NdArray.default_device())
    right = Model(linear_in=nn.LinearConfig(10, 64).init_with(saved.into_record().linear_in), linear_out=head,
                  activation=nn.Relu())
    assert ex[4].verdict((saved, right)).ok
    fresh = Model(linear_in=nn.LinearConfig(10, 64).init(NdArray.default_device()), linear_out=head,
                  activation=nn.Relu())
    assert "not the saved one" in ex[4].verdict((saved, fresh)).message
    assert "three outputs" in ex[4].verdict((saved, saved)).message
