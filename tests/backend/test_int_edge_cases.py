"""Integer edge cases on every backend: division and remainder by zero raise,
remainder follows torch.remainder, i64 overflow wraps as in torch, scalars
outside i64 are refused, and `repeat`/`expand` respect MAX_VIEW_ELEMENTS.
PyTorch is the independent oracle."""

import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from burnbook import Int, Tensor
from burnbook.tensor import ValueRangeError
from burnbook.tensor.layout import MAX_VIEW_ELEMENTS

from .oracle import assert_tensor

torch = pytest.importorskip("torch")

I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1
# torch traps (SIGFPE) on I64_MIN / -1, so that pair is checked on its own.
A = [-7, 7, -7, 7, 0, 5, -1, I64_MIN, I64_MAX, 13, I64_MIN]
B = [2, 2, -2, -2, 3, -5, 4, 3, 3, -13, I64_MAX]


def ints(backend, values, rank=1):
    return Tensor[backend, rank, Int].from_data(np.array(values, dtype=np.int64))


# -- division and remainder by zero --------------------------------------------------

@pytest.mark.parametrize("op, sign", [(lambda a, b: a / b, "/"), (lambda a, b: a.div(b), "/"),
                                      (lambda a, b: a % b, "%"), (lambda a, b: a.remainder(b), "%")],
                         ids=["/", "div", "%", "remainder"])
def test_int_tensor_divisor_holding_zero_raises(backend, op, sign):
    a = ints(backend, [[1, 2, 3], [4, 5, 6]], rank=2)
    b = ints(backend, [[1, 0, 2]], rank=2)
    with pytest.raises(ZeroDivisionError) as err:
        op(a, b)
    message = str(err.value)
    assert ("div" if sign == "/" else "remainder") in message
    assert f"[2, 3] {sign} Int tensor [1, 3]" in message
    assert "index [0, 1]" in message


@pytest.mark.parametrize("op", [lambda a: a / 0, lambda a: a.div_scalar(0), lambda a: a % 0,
                                lambda a: a.remainder_scalar(0), lambda a: a / 0.0, lambda a: 6 / a.mul_scalar(0),
                                lambda a: 6 % a.mul_scalar(0)],
                         ids=["/ 0", "div_scalar", "% 0", "remainder_scalar", "/ 0.0", "6 / zeros", "6 % zeros"])
def test_int_scalar_zero_divisor_raises(backend, op):
    with pytest.raises(ZeroDivisionError, match=r"(div|remainder): integer division by zero: Int tensor \[3\]"):
        op(ints(backend, [1, 2, 3]))


def test_float_division_by_zero_stays_ieee(backend):
    x = Tensor[backend, 1].from_floats([1.0, -1.0, 0.0])
    want = torch.tensor([1.0, -1.0, 0.0]) / 0.0
    assert_tensor(x / 0.0, want.numpy())
    assert_tensor(x / x.zeros_like(), want.numpy())


# -- division and remainder values (torch as oracle) -----------------------------------

def test_int_div_truncates_like_torch(backend):
    got = ints(backend, A) / ints(backend, B)
    want = torch.div(torch.tensor(A), torch.tensor(B), rounding_mode="trunc")
    assert_tensor(got, want.numpy())


def test_int_min_divided_by_minus_one_wraps(backend):
    # The one i64 quotient that overflows wraps, like every i64 overflow;
    # its remainder is 0, as Python's % gives.
    a, b = ints(backend, [I64_MIN]), ints(backend, [-1])
    assert_tensor(a / b, np.array([I64_MIN]))
    assert_tensor(a % b, np.array([I64_MIN % -1]))
    assert_tensor(a % -1, np.array([0]))


def test_int_remainder_matches_torch(backend):
    got = ints(backend, A) % ints(backend, B)
    assert_tensor(got, torch.remainder(torch.tensor(A), torch.tensor(B)).numpy())
    assert got.to_numpy().tolist() == [a % b for a, b in zip(A, B)]  # Python's % agrees


@pytest.mark.parametrize("s", [3, -3, 1, -1, 7])
def test_int_remainder_scalar_matches_torch(backend, s):
    want = torch.remainder(torch.tensor(A), s).numpy()
    assert_tensor(ints(backend, A) % s, want)
    assert_tensor(ints(backend, A).remainder_scalar(s), want)
    assert_tensor(100 % ints(backend, [3, -7, 9]), torch.remainder(torch.tensor(100), torch.tensor([3, -7, 9])).numpy())


def test_int_remainder_broadcasts(backend):
    a = [[-7, 8, 9], [10, -11, 12]]
    b = [[4], [-5]]
    got = ints(backend, a, rank=2) % ints(backend, b, rank=2)
    assert_tensor(got, torch.remainder(torch.tensor(a), torch.tensor(b)).numpy())


def test_remainder_refuses_float_tensors(backend):
    with pytest.raises(TypeError, match="remainder is an Int operation.*Float"):
        Tensor[backend, 1].from_floats([1.0]) % 2


# -- i64 range ------------------------------------------------------------------

def test_i64_overflow_wraps_like_torch(backend):
    big = ints(backend, [I64_MAX, I64_MIN, 2 ** 62])
    t = torch.tensor([I64_MAX, I64_MIN, 2 ** 62])
    assert_tensor(big + 1, (t + 1).numpy())
    assert_tensor(big - 1, (t - 1).numpy())
    assert_tensor(big * 4, (t * 4).numpy())
    assert_tensor(-big, (-t).numpy())


def test_int_neg_and_abs_of_the_minimum_wrap_like_torch(backend):
    # Int tensors are i64 on every backend: -MIN and |MIN| overflow to MIN,
    # as torch.neg/torch.abs (and NumPy) give in two's complement.
    values = [I64_MIN, I64_MIN + 1, -1, 0, 1, I64_MAX]
    x, t = ints(backend, values), torch.tensor(values)
    assert_tensor(x.neg(), torch.neg(t).numpy())
    assert_tensor(x.abs(), torch.abs(t).numpy())
    assert x.abs().to_numpy()[0] == I64_MIN


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_onnx_neg_and_abs_wrap_in_the_graphs_int_type(backend, dtype):
    """An imported Neg/Abs on int8/16/32 values (held in i64 tensors) gives
    what onnxruntime gives in the narrow type: -(-128) and |-128| are -128."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper

    from burnbook.importer.onnx import build_model

    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, -1, 0, 1, info.max], dtype=dtype)
    elem = onnx.helper.np_dtype_to_tensor_dtype(x.dtype)
    for op in ("Neg", "Abs"):
        graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", elem, [6])],
                                  [helper.make_tensor_value_info("y", elem, [6])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        model.ir_version = 10   # what onnxruntime 1.23 reads
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        want = session.run(None, {"x": x})[0]
        assert want[0] == info.min   # the oracle wraps
        got = build_model(model, backend=backend)(ints(backend, x.astype(np.int64)))
        assert_tensor(got, want.astype(np.int64))


@pytest.mark.parametrize("op", ["add_scalar", "sub_scalar", "mul_scalar", "div_scalar", "equal_elem", "mask_fill"])
@pytest.mark.parametrize("s", [2 ** 63, -2 ** 63 - 1, 2 ** 70])
def test_int_scalar_outside_i64_is_refused(backend, op, s):
    t = ints(backend, [1, 2])
    call = (lambda: t.mask_fill(t.equal_elem(1), s)) if op == "mask_fill" else (lambda: getattr(t, op)(s))
    with pytest.raises(ValueRangeError) as err:
        call()
    assert isinstance(err.value, OverflowError) and isinstance(err.value, ValueError)
    assert str(s) in str(err.value) and "i64" in str(err.value)
    assert op.replace("_scalar", "").replace("_elem", "") in str(err.value)


def test_float_tensor_takes_large_int_scalars(backend):
    x = Tensor[backend, 1].from_floats([1.0, -2.0])
    assert_tensor(x.add_scalar(2 ** 63), (torch.tensor([1.0, -2.0]) + 2 ** 63).numpy(), rtol=1e-7)
    assert_tensor(x * 2 ** 70, (torch.tensor([1.0, -2.0]) * float(2 ** 70)).numpy(), rtol=1e-7)
    with pytest.raises(ValueRangeError, match=r"add_scalar: the scalar 1\d{401} is too large"):
        x.add_scalar(10 ** 401)


# -- size limit on views ------------------------------------------------------------

def test_repeat_beyond_the_view_limit_raises(backend):
    x = Tensor[backend, 1].zeros([1])
    with pytest.raises(ValueError) as err:
        x.repeat(0, 2 ** 40)
    message = str(err.value)
    assert "repeat" in message and "[1] -> [1099511627776]" in message and "MAX_VIEW_ELEMENTS" in message
    with pytest.raises(ValueError, match=r"repeat.*\[2\] -> \[%d\]" % (MAX_VIEW_ELEMENTS + 2)):
        Tensor[backend, 1].zeros([2]).repeat(0, MAX_VIEW_ELEMENTS // 2 + 1)


def test_expand_beyond_the_view_limit_raises(backend):
    x = Tensor[backend, 2].zeros([1, 1])
    with pytest.raises(ValueError, match=r"expand: \[1, 1\] -> \[1048576, 1048576\] would hold 1099511627776"):
        x.expand([2 ** 20, 2 ** 20])
    with pytest.raises(ValueError, match="expand"):
        x.expand([MAX_VIEW_ELEMENTS + 1, 1])


def test_repeat_and_expand_below_the_limit_still_work(backend):
    x = Tensor[backend, 2].from_floats([[1.0, 2.0]])
    assert_tensor(x.repeat(0, 3), np.tile([[1.0, 2.0]], (3, 1)))
    assert_tensor(x.expand([4, -1]), np.broadcast_to([[1.0, 2.0]], (4, 2)))
    assert_tensor(ints(backend, [[5]], rank=2).repeat(1, 2), np.array([[5, 5]]))


def test_a_view_at_the_limit_is_made_and_reduced(backend):
    if backend.name() != "ndarray":
        pytest.skip("a zero-stride view costs nothing on NumPy only (Taichi's repeat allocates 1 GiB)")
    x = Tensor[backend, 1].ones([1]).repeat(0, MAX_VIEW_ELEMENTS)
    assert x.dims() == [MAX_VIEW_ELEMENTS]
    assert x.slice([(MAX_VIEW_ELEMENTS - 2, MAX_VIEW_ELEMENTS)]).sum().into_scalar() == 2.0


_REDUCE_FOREVER = textwrap.dedent("""
    import signal
    # A child started from a background job inherits SIGINT ignored; a user's
    # Python has the default handler, which is what this test is about.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from burnbook import Tensor
    from burnbook.backend import NdArray
    from burnbook.tensor.layout import MAX_VIEW_ELEMENTS

    x = Tensor[NdArray, 1].ones([1]).repeat(0, MAX_VIEW_ELEMENTS)
    print("ready", flush=True)
    while True:
        x.sum()
""")


def test_ctrl_c_stops_reductions_over_the_largest_view():
    """Each reduction over the largest allowed view returns within a
    second or so, and the interpreter then raises KeyboardInterrupt."""
    child = subprocess.Popen([sys.executable, "-c", _REDUCE_FOREVER], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        start = time.monotonic()
        _, err = child.communicate(timeout=30)
        assert time.monotonic() - start < 10
        assert "KeyboardInterrupt" in err
    finally:
        if child.poll() is None:
            child.kill()
