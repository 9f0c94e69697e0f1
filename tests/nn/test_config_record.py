"""Initializers, config save/load of layer configs, and records of a small model."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.backend import NdArray
from burnbook.config import config
from burnbook.module import Module
from burnbook.nn import initializer as init
from burnbook.record import NamedMpkFileRecorder

from .helpers import B


def draw(initializer, shape=(400, 300), fan_in=None, fan_out=None) -> np.ndarray:
    B.seed(0)
    p = initializer.init(list(shape), fan_in=fan_in, fan_out=fan_out)
    assert p.val().dims() == list(shape) and p.is_require_grad()
    return p.val().to_numpy()


def test_fixed_initializers() -> None:
    np.testing.assert_array_equal(draw(nn.Initializer.Constant(0.5), (2, 3)), np.full((2, 3), 0.5))
    np.testing.assert_array_equal(draw(init.Ones(), (4,)), np.ones(4))
    np.testing.assert_array_equal(draw(init.Zeros(), (2, 2, 2)), np.zeros((2, 2, 2)))


@pytest.mark.parametrize("initializer, fan_in, fan_out, bound", [
    (init.Uniform(-0.2, 0.3), None, None, None),
    (init.KaimingUniform(gain=1 / math.sqrt(3)), 400, 300, 1 / math.sqrt(400)),
    (init.KaimingUniform(gain=2.0, fan_out_only=True), 400, 300, 2.0 * math.sqrt(3 / 300)),
    (init.XavierUniform(gain=1.0), 400, 300, math.sqrt(6 / 700)),
])
def test_uniform_initializers_fill_their_range(initializer, fan_in, fan_out, bound) -> None:
    w = draw(initializer, fan_in=fan_in, fan_out=fan_out)
    lo, hi = (-0.2, 0.3) if bound is None else (-bound, bound)
    assert w.min() >= lo and w.max() <= hi
    assert w.min() < lo + 0.01 * (hi - lo) and w.max() > hi - 0.01 * (hi - lo)


@pytest.mark.parametrize("initializer, fan_in, fan_out, mean, std", [
    (init.Normal(1.0, 0.5), None, None, 1.0, 0.5),
    (init.KaimingNormal(gain=math.sqrt(2)), 400, 300, 0.0, math.sqrt(2 / 400)),
    (init.XavierNormal(gain=1.0), 400, 300, 0.0, math.sqrt(2 / 700)),
])
def test_normal_initializers_have_their_moments(initializer, fan_in, fan_out, mean, std) -> None:
    w = draw(initializer, fan_in=fan_in, fan_out=fan_out)
    assert abs(w.mean() - mean) < 0.02 * std + 1e-3 and abs(w.std() / std - 1) < 0.02


def test_initializers_need_their_fans_and_are_seeded() -> None:
    with pytest.raises(ValueError, match="fan_in"):
        init.KaimingUniform(gain=1.0).init([2, 2])
    with pytest.raises(ValueError, match="fan_out"):
        init.XavierNormal().init([2, 2], fan_in=2)
    np.testing.assert_array_equal(draw(init.Normal(0.0, 1.0), (3, 3)), draw(init.Normal(0.0, 1.0), (3, 3)))
    plain = init.Ones().init([2], backend=NdArray)
    assert plain.val()._B is NdArray


def test_initializer_variants_save_tagged(tmp_path: Path) -> None:
    cfg = nn.LinearConfig(3, 4, bias=False, initializer=nn.Initializer.XavierNormal(gain=2.0))
    assert cfg.to_dict()["initializer"] == {"XavierNormal": {"gain": 2.0}}
    back = nn.LinearConfig.load(cfg.save(tmp_path / "linear.json"))
    assert back == cfg and type(back.initializer) is init.XavierNormal
    loaded = nn.LinearConfig.from_dict({"d_input": 1, "d_output": 2, "initializer": {"Ones": {}}})
    assert loaded.initializer == init.Ones()
    assert nn.LinearConfig(1, 2).initializer == init.KaimingUniform(gain=1 / math.sqrt(3), fan_out_only=False)


def test_layer_configs_round_trip(tmp_path: Path) -> None:
    configs = [
        nn.TransformerEncoderConfig(16, 32, 4, 2, norm_first=True).with_dropout(0.2),
        nn.CrossEntropyLossConfig(pad_tokens=[0, 5], smoothing=0.1),
        nn.LstmConfig(3, 8, bias=False),
        nn.BatchNormConfig(8, momentum=0.05),
        nn.MultiHeadAttentionConfig(8, 2, quiet_softmax=True),
        nn.PositionalEncodingConfig(8, max_sequence_size=100),
    ]
    for i, cfg in enumerate(configs):
        path = cfg.save(tmp_path / f"c{i}.json")
        assert type(cfg).load(path) == cfg
    assert configs[1].to_dict() == {"pad_tokens": [0, 5], "weights": None, "smoothing": 0.1, "logits": True}


# -- records of a small model -------------------------------------------------------------


class Net(Module):
    """Embedding -> Lstm -> LayerNorm -> Linear, with BatchNorm on the features."""

    embedding: nn.Embedding
    lstm: nn.Lstm
    norm: nn.LayerNorm
    batch_norm: nn.BatchNorm
    dropout: nn.Dropout
    head: nn.Linear
    activation: nn.Relu

    def forward(self, ids):
        x = self.embedding.forward(ids)
        _, h = self.lstm.forward(x)
        x = self.norm.forward(h[:, -1].squeeze(1))
        x = self.batch_norm.forward(self.dropout.forward(self.activation.forward(x)))
        return self.head.forward(x)


@config
class NetConfig:
    vocab: int
    hidden: int
    classes: int
    dropout: float = 0.5

    def init(self, device=None, backend=None) -> Net:
        return Net(
            embedding=nn.EmbeddingConfig(self.vocab, self.hidden).init(device, backend),
            lstm=nn.LstmConfig(self.hidden, self.hidden).init(device, backend),
            norm=nn.LayerNormConfig(self.hidden).init(device, backend),
            batch_norm=nn.BatchNormConfig(self.hidden).init(device, backend),
            dropout=nn.DropoutConfig(self.dropout).init(),
            head=nn.LinearConfig(self.hidden, self.classes).init(device, backend),
            activation=nn.Relu(),
        )


def test_model_record_round_trip(tmp_path: Path) -> None:
    cfg = NetConfig(10, 6, 3)
    B.seed(1)
    model = cfg.init()
    ids = Tensor[B, 2].from_data(np.array([[1, 2, 3], [4, 5, 9], [0, 0, 1]])).int()
    model.forward(ids)  # one training step's forward moves the BatchNorm running stats
    path = model.save_file(tmp_path / "net", NamedMpkFileRecorder())
    B.seed(2)
    loaded = cfg.init().load_file(path, NamedMpkFileRecorder())
    for (name, a), (_, b) in zip(model.named_params(), loaded.named_params()):
        np.testing.assert_array_equal(a.val().to_numpy(), b.val().to_numpy(), err_msg=name)
        assert a.id == b.id and a.is_require_grad() == b.is_require_grad()
    record = model.into_record()
    assert record.head.weight.shape == [6, 3]
    assert "batch_norm.running_var" in record.flatten()
    plain = ids.inner()
    np.testing.assert_array_equal(model.valid().forward(plain).to_numpy(), loaded.valid().forward(plain).to_numpy())
    # init_with builds a layer straight from its record.
    head = nn.LinearConfig(6, 3).init_with(record.head, backend=NdArray)
    np.testing.assert_array_equal(head.weight.val().to_numpy(), model.head.weight.val().to_numpy())
    # embedding, 4 LSTM gates, LayerNorm, BatchNorm's gamma/beta (its running
    # stats are RunningState: recorded, not counted), head.
    assert model.num_params() == 10 * 6 + 4 * (6 * 6 + 6 + 6 * 6 + 6) + 2 * 6 + 2 * 6 + 6 * 3 + 3
