"""Optimizer state as a record: saved with every recorder and loaded back,
a resumed optimizer continues exactly as an uninterrupted one, and records
that do not fit raise `RecordError`."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import TensorData
from burnbook.optim import (
    AdaGradConfig, AdamConfig, AdamWConfig, MomentumConfig, RmsPropConfig, SgdConfig,
)
from burnbook.record import (
    BinBytesRecorder, BinFileRecorder, HalfPrecisionSettings, JsonGzFileRecorder, NamedMpkFileRecorder,
    NamedMpkGzFileRecorder, PrettyJsonFileRecorder, Record, RecordError,
)
from .helpers import data, grads_of, make_mlp, weights

CONFIGS = {
    "sgd-momentum": SgdConfig(momentum=MomentumConfig(nesterov=True)),
    "adam": AdamConfig(),
    "adamw": AdamWConfig(),
    "rmsprop-centered": RmsPropConfig(centered=True),
    "adagrad": AdaGradConfig(lr_decay=0.01),
}
BATCHES = [data(seed=20 + i) for i in range(6)]


def _train(model, optim, batches, lr=0.02):
    for x, y in batches:
        model = optim.step(lr, model, grads_of(model, x, y))
    return model


def test_record_layout() -> None:
    model = make_mlp()
    optim = AdamConfig().init()
    _train(model, optim, BATCHES[:2])
    record = optim.to_record()
    assert record.optimizer == "Adam"
    assert set(record.states) == {p.id.value for _, p in model.named_params()}
    state = record.states[model.l1.weight.id.value]
    assert state.time == 2
    assert isinstance(state.moment_1, TensorData) and state.moment_1.shape == [4, 6]
    assert SgdConfig().init().to_record() == Record(optimizer="Sgd", states={})


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("recorder", [NamedMpkFileRecorder, NamedMpkGzFileRecorder, BinFileRecorder,
                                      JsonGzFileRecorder, PrettyJsonFileRecorder])
def test_resumed_optimizer_continues_identically(name, recorder, tmp_path) -> None:
    config = CONFIGS[name]
    start = make_mlp()
    straight = _train(start, config.init(), BATCHES)

    optim = config.init()
    half = _train(start, optim, BATCHES[:3])
    half.save_file(tmp_path / "model", recorder())
    recorder().record(optim.to_record(), tmp_path / "optim")

    # A fresh process would rebuild both from the files; the model's
    # parameter ids come back from its record, so the states line up.
    model = make_mlp(seed=42).load_file(tmp_path / "model", recorder())
    resumed_optim = config.init().load_record(recorder().load(tmp_path / "optim"))
    assert resumed_optim.to_record() == optim.to_record()
    resumed = _train(model, resumed_optim, BATCHES[3:])
    for path, w in weights(straight).items():
        np.testing.assert_array_equal(weights(resumed)[path], w, err_msg=path)


def test_bytes_and_half_precision_records() -> None:
    model = make_mlp()
    optim = RmsPropConfig().init()
    _train(model, optim, BATCHES[:2])
    record = optim.to_record()
    assert BinBytesRecorder().load(BinBytesRecorder().record(record)) == record
    half = NamedMpkFileRecorder(HalfPrecisionSettings).from_bytes(
        NamedMpkFileRecorder(HalfPrecisionSettings).to_bytes(record))
    key = model.l1.weight.id.value
    np.testing.assert_allclose(half.states[key].square_avg.array, record.states[key].square_avg.array,
                               rtol=1e-3, atol=1e-6)
    RmsPropConfig().init().load_record(half)  # loads, values rounded to f16


def test_load_record_replaces_state_and_returns_optimizer() -> None:
    model = make_mlp()
    optim = SgdConfig(momentum=MomentumConfig()).init()
    _train(model, optim, BATCHES[:1])
    assert len(optim) == 4
    empty = SgdConfig(momentum=MomentumConfig()).init().to_record()
    assert optim.load_record(empty) is optim and len(optim) == 0


def test_records_that_do_not_fit() -> None:
    model = make_mlp()
    adam = AdamConfig().init()
    _train(model, adam, BATCHES[:1])
    record = adam.to_record()
    with pytest.raises(RecordError, match="'Adam' optimizer, not of 'AdamW'"):
        AdamWConfig().init().load_record(record)
    with pytest.raises(RecordError, match="not an optimizer record"):
        AdamConfig().init().load_record(model.into_record())
    sgd = SgdConfig(momentum=MomentumConfig()).init()
    _train(model, sgd, BATCHES[:1])
    with pytest.raises(RecordError, match=r"fields \['velocity'\], this Sgd keeps \[\]"):
        SgdConfig().init().load_record(sgd.to_record())
    key = model.l1.weight.id.value
    broken = Record(optimizer="Adam", states={key: {"time": "one", "moment_1": 0, "moment_2": 0}})
    with pytest.raises(RecordError, match="should be tensors or ints"):
        AdamConfig().init().load_record(broken)


def test_state_of_another_shape_is_reported_at_the_step() -> None:
    model = make_mlp()
    key = model.l1.weight.id.value
    zeros = TensorData.from_numpy(np.zeros((2, 2), np.float32))
    optim = AdamConfig().init().load_record(
        Record(optimizer="Adam", states={key: {"time": 1, "moment_1": zeros, "moment_2": zeros}}))
    with pytest.raises(ValueError, match=r"shape \[2, 2\] in the loaded record, the parameter \[4, 6\]"):
        optim.step(0.1, model, grads_of(model, *BATCHES[0]))
