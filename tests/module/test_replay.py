"""Replay (`burnbook/module/replay.py`): a module's NdArray forward pass
recorded once as its backend calls and re-run without the Tensor layer.
Every test compares against the eager forward pass (or onnxruntime), on new
values, shapes, weights and control flow that the recording must not freeze."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Distribution, Tensor, activation
from burnbook.backend import Autodiff, NdArray
from burnbook.module import Module
from burnbook.module.replay import replay_call, replay_state
from burnbook.nn import LinearConfig
from burnbook.tensor.core import _SPECIALISED

T2 = Tensor[NdArray, 2]
RUNS = {"forward": 0}


class Net(Module):
    """A linear layer, a ReLU, and a reshape built from the input's shape;
    counts its eager forward passes (a Python side effect replay skips)."""

    linear: object

    def forward(self, x):
        RUNS["forward"] += 1
        n = x.dims()[0]
        return (activation.relu(self.linear(x)).reshape([n, -1]) * 2.0) + 1.0


class Replayed(Net):
    _replay = staticmethod(replay_call)


def _net(cls=Replayed, seed: int = 0):
    NdArray.seed(seed)
    return cls(linear=LinearConfig(3, 4).init(backend=NdArray))


def _x(seed: int, rows: int = 2) -> T2:
    return T2.from_data(np.random.default_rng(seed).standard_normal((rows, 3)).astype(np.float32))


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())


def test_replay_gives_the_eager_values_for_new_inputs_without_running_forward():
    net = _net()
    before = RUNS["forward"]
    outs = [net(_x(i)) for i in range(6)]
    # the first call records, the second checks the recording against an eager run,
    # the rest replay: forward's Python ran twice (plus the references below)
    assert RUNS["forward"] - before == 2
    for i, out in enumerate(outs):
        _same(out, net.forward(_x(i)))
    (plan,) = replay_state(net)["plans"].values()
    assert plan["verified"] and plan["calls"] >= 4


def test_shapes_that_never_repeat_stop_the_recording():
    net = _net()
    for rows in range(1, 12):          # each shape once: recorded, never replayed
        _same(net(_x(rows, rows)), net.forward(_x(rows, rows)))
    state = replay_state(net)
    assert "none replayed" in state["disabled"]
    _same(net(_x(0, 3)), net.forward(_x(0, 3)))


def test_each_input_shape_gets_its_own_recording():
    net = _net()
    for i in range(4):
        for rows in (1, 2, 5):
            _same(net(_x(i, rows)), net.forward(_x(i, rows)))
    plans = replay_state(net)["plans"]
    assert len(plans) == 3 and all(p["verified"] for p in plans.values())


class Scaled(Module):
    scale: float = 3.0
    _replay = staticmethod(replay_call)

    def forward(self, x):
        weights = T2.from_data(np.arange(6, dtype=np.float32).reshape(2, 3))   # made from constants
        return x * weights.mul_scalar(self.scale) + 1.0


def test_calls_on_constants_alone_are_folded_into_the_recording():
    net = Scaled()
    for i in range(4):
        _same(net(_x(i)), net.forward(_x(i)))
    (plan,) = replay_state(net)["plans"].values()
    assert plan["calls"] == 2     # the multiply and the add; from_data and mul_scalar ran once


class Branchy(Module):
    """Takes a branch on the input's values: can never be replayed."""

    linear: object
    _replay = staticmethod(replay_call)

    def forward(self, x):
        y = self.linear(x)
        return y * 2.0 if y.sum().into_scalar() > 0 else y - 100.0


def test_control_flow_on_the_input_values_runs_eagerly_and_says_why():
    NdArray.seed(1)
    net = Branchy(linear=LinearConfig(3, 4).init(backend=NdArray))
    xs = [_x(i) for i in range(8)]
    signs = set()
    for x in xs:
        got = net(x)
        want = net.forward(x)
        _same(got, want)
        signs.add(bool(net.linear(x).sum().into_scalar() > 0))
    assert signs == {True, False}, "the inputs should take both branches"
    (reason,) = replay_state(net)["plans"].values()
    assert isinstance(reason, str) and "reads values computed from the input" in reason


def test_a_reassigned_layer_is_used_at_once():
    net = _net()
    x = _x(0)
    for _ in range(3):
        net(x)
    NdArray.seed(9)
    net.linear = LinearConfig(3, 4).init(backend=NdArray)
    _same(net(x), net.forward(x))
    assert not np.array_equal(net(x).to_numpy(), _net()(x).to_numpy())


def test_weights_assigned_in_place_are_used_at_once():
    net = _net()
    x = _x(0)
    for _ in range(3):
        before = net(x).to_numpy()
    weight = net.linear.weight.val()
    weight[0:1] = 5.0          # Tensor.__setitem__: the Param's tensor gets new values
    _same(net(x), net.forward(x))
    assert not np.array_equal(net(x).to_numpy(), before)


class Stack(Module):
    layers: list
    _replay = staticmethod(replay_call)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_a_list_of_layers_edited_in_place_is_used_at_once():
    NdArray.seed(2)
    net = Stack(layers=[LinearConfig(3, 3).init(backend=NdArray) for _ in range(2)])
    x = _x(0)
    for _ in range(3):
        net(x)
    NdArray.seed(3)
    net.layers[1] = LinearConfig(3, 3).init(backend=NdArray)   # no Module.__setattr__ here
    _same(net(x), net.forward(x))


class Noisy(Module):
    linear: object
    _replay = staticmethod(replay_call)

    def forward(self, x):
        return self.linear(x) + T2.random(x.dims()[:1] + [4], Distribution.Normal(0.0, 1.0))


def test_random_draws_are_new_on_every_call():
    NdArray.seed(4)
    net = Noisy(linear=LinearConfig(3, 4).init(backend=NdArray))
    x = _x(0)
    outs = [net(x).to_numpy() for _ in range(5)]
    assert all(not np.array_equal(a, b) for a, b in zip(outs, outs[1:]))


def test_autodiff_tensors_run_eagerly_and_keep_their_graph():
    B = Autodiff[NdArray]
    NdArray.seed(5)
    net = Replayed(linear=LinearConfig(3, 4).init(backend=B))
    x = Tensor[B, 2].from_data(np.ones((2, 3), np.float32)).require_grad()
    for _ in range(3):
        loss = net(x).sum()
    grads = loss.backward()
    assert x.grad(grads) is not None
    assert replay_state(net)["plans"] == {}


def test_recording_leaves_the_backend_as_it_was():
    net = _net()
    ops = {name: NdArray.__dict__.get(name) for name in dir(NdArray)}
    net(_x(0))
    net(_x(1, rows=7))   # a new shape: a second recording
    assert {name: NdArray.__dict__.get(name) for name in dir(NdArray)} == ops
    for (backend, _, _), cls in _SPECIALISED.items():
        if backend is NdArray:
            assert not any(hasattr(fn, "_traced_op") for fn in vars(cls).values())


class Failing(Module):
    linear: object
    _replay = staticmethod(replay_call)

    def forward(self, x):
        y = self.linear(x)
        if x.dims()[0] == 3:
            raise RuntimeError("three rows")
        return y


def test_a_forward_pass_that_raises_while_recording_leaves_nothing_behind():
    NdArray.seed(6)
    net = Failing(linear=LinearConfig(3, 4).init(backend=NdArray))
    with pytest.raises(RuntimeError, match="three rows"):
        net(_x(0, rows=3))
    assert not any(hasattr(NdArray.__dict__.get(n), "_traced_op") for n in dir(NdArray))
    for i in range(3):
        _same(net(_x(i)), net.forward(_x(i)))


class Outer(Module):
    inner: object
    _replay = staticmethod(replay_call)

    def forward(self, x):
        return self.inner(x) * 3.0


def test_a_replayed_module_inside_another_is_recorded_as_part_of_it():
    net = Outer(inner=_net())
    for i in range(4):
        _same(net(_x(i)), net.forward(_x(i)))
    (plan,) = replay_state(net)["plans"].values()
    assert plan["verified"] and plan["calls"] >= 5   # the inner module's calls and the outer multiply


def test_threads_calling_one_module_get_the_eager_values():
    """Recording patches NdArray for its own thread only: other threads'
    calls, replayed or eager, see the plain ops, and nothing deadlocks."""
    import threading

    net = _net()
    other = _net(seed=3)
    xs = [_x(i, rows=1 + i % 3) for i in range(12)]
    want = [net.forward(x).to_numpy() for x in xs]
    want_other = [other.forward(x).to_numpy() for x in xs]
    errors: list = []

    def work(model, expected) -> None:
        try:
            for _ in range(5):
                for x, w in zip(xs, expected):
                    np.testing.assert_array_equal(model(x).to_numpy(), w)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(m, w)) for m, w in
               ((net, want), (net, want), (other, want_other), (other, want_other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[0]


def test_a_replayed_module_is_freed_with_its_recordings():
    import gc
    import weakref

    net = _net()
    for i in range(3):
        net(_x(i))
    gone = weakref.ref(net)
    del net
    gc.collect()
    assert gone() is None


def test_keyword_arguments_and_an_instance_forward_run_eagerly():
    net = _net()
    x = _x(0)
    _same(net(x=x), net.forward(x))
    object.__setattr__(net, "forward", lambda x: x * 0.0)
    for _ in range(3):
        assert not net(x).to_numpy().any()


# -- an imported model ---------------------------------------------------------------------

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from burnbook.importer.onnx import build_model  # noqa: E402


def _flatten_mlp() -> object:
    """[batch, 2, 3] -> Flatten by a reshape to [Shape[0], -1] (shape
    arithmetic on a dynamic batch) -> Gemm -> Relu."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((6, 5)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "b"),
             numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
             helper.make_node("Concat", ["batch", "minus_one"], ["flat_shape"], axis=0),
             helper.make_node("Reshape", ["x", "flat_shape"], ["flat"]),
             helper.make_node("Gemm", ["flat", "w", "b"], ["h"]),
             helper.make_node("Relu", ["h"], ["y"])]
    graph = helper.make_graph(nodes, "flatten_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_an_imported_model_replays_and_agrees_with_onnxruntime():
    model = _flatten_mlp()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ours = build_model(model, backend=NdArray)
    rng = np.random.default_rng(1)
    for _ in range(3):
        for batch in (1, 4):
            x = rng.standard_normal((batch, 2, 3)).astype(np.float32)
            got = ours(Tensor[NdArray, 3].from_data(x)).to_numpy()
            np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
    plans = replay_state(ours)["plans"]
    assert len(plans) == 2 and all(p["verified"] for p in plans.values())
    # the shape arithmetic (Shape, Gather, Concat) ran once, while recording:
    # only the reshape, the matmul, the bias and the ReLU are replayed
    assert all(p["calls"] <= 5 for p in plans.values()), plans


def test_a_modelgen_file_replays_too(tmp_path):
    """The generated class itself sets the hook (`_replay = replay_call`), so
    a model built from ModelGen's files replays as `build_model`'s does."""
    import importlib.util

    from burnbook.importer.onnx import ModelGen

    path = tmp_path / "flatten_mlp.onnx"
    onnx.save(_flatten_mlp(), str(path))
    result = ModelGen().input(path).out_dir(tmp_path / "model").run()
    assert "_replay = replay_call" in result.source_path.read_text()
    spec = importlib.util.spec_from_file_location("flatten_mlp_generated", result.source_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model.default(backend=NdArray)
    x = Tensor[NdArray, 3].from_data(np.random.default_rng(2).standard_normal((3, 2, 3)).astype(np.float32))
    for _ in range(3):
        _same(model(x), model.forward(x))
    (plan,) = replay_state(model)["plans"].values()
    assert plan["verified"]
