"""Nothing is coerced silently: sizes must be non-negative ints, tensor data
must be numbers that fit the kind's element type, and NumPy's floating-point
warnings are muted only for float ops."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from burnbook import Bool, Int, Shape, Tensor, TensorData
from burnbook.tensor import ValueRangeError

from .oracle import assert_tensor

BAD_SIZES = [
    (2.7, TypeError, "2.7"),
    (0.5, TypeError, "0.5"),
    (2.0, TypeError, "2.0"),
    ("3", TypeError, "'3'"),
    (True, TypeError, "True"),
    (None, TypeError, "None"),
    (-2, ValueError, "-2"),
]


@pytest.mark.parametrize("make", ["zeros", "ones", "empty", "random", "full"])
@pytest.mark.parametrize("size, error, shown", BAD_SIZES, ids=[str(b[0]) for b in BAD_SIZES])
def test_creation_refuses_non_int_sizes(backend, make, size, error, shown):
    T = Tensor[backend, 2]
    args = ([3, size], 1.0) if make == "full" else ([3, size],)
    with pytest.raises(error) as err:
        getattr(T, make)(*args)
    assert make in str(err.value) and shown in str(err.value)


@pytest.mark.parametrize("shape", ["12", b"12", 2.7], ids=["str", "bytes", "float"])
def test_a_shape_that_is_not_a_list_is_refused(backend, shape):
    with pytest.raises(TypeError, match=r"zeros: shape must be a list of ints, got"):
        Tensor[backend, 2].zeros(shape)


def test_numpy_ints_are_sizes(backend):
    t = Tensor[backend, 2].zeros([np.int64(2), np.int32(3)])
    assert t.dims() == [2, 3] and all(type(d) is int for d in t.dims())
    assert Tensor[backend, 1].ones(np.uint8(4)).dims() == [4]


@pytest.mark.parametrize("call, error, shown", [
    (lambda t: t.reshape([2.0, 3]), TypeError, "reshape: shape [2.0, 3] holds 2.0"),
    (lambda t: t.reshape([-2, 3]), ValueError, "reshape: shape [-2, 3] has the negative size -2"),
    (lambda t: t.reshape("6"), TypeError, "reshape: shape must be a list of ints"),
    (lambda t: t.expand([2.0, 3]), TypeError, "expand: shape [2.0, 3] holds 2.0"),
    (lambda t: t.expand([2, -3]), ValueError, "expand: shape [2, -3] has the negative size -3"),
    (lambda t: t.repeat(0, 2.5), TypeError, "repeat: times must be a non-negative int, got 2.5"),
    (lambda t: t.repeat(0, -1), ValueError, "repeat: times must be a non-negative int, got -1"),
    (lambda t: t.repeat(0, True), TypeError, "repeat: times must be a non-negative int, got True"),
    (lambda t: t.repeat(0.0, 2), TypeError, "repeat: dim must be an int, got 0.0"),
    (lambda t: t.narrow(1, 0.5, 1), TypeError, "narrow: start must be a non-negative int, got 0.5"),
    (lambda t: t.narrow(1, 0, "1"), TypeError, "narrow: length must be a non-negative int, got '1'"),
    (lambda t: t.chunk(1.5, 1), TypeError, "chunk: num_chunks must be a non-negative int, got 1.5"),
    (lambda t: t.sum_dim(True), TypeError, "sum_dim: dim must be an int, got True"),
], ids=["reshape float", "reshape negative", "reshape str", "expand float", "expand negative",
        "repeat float", "repeat negative", "repeat bool", "repeat float dim", "narrow float",
        "narrow str", "chunk float", "sum_dim bool"])
def test_layout_ops_refuse_non_int_sizes(backend, call, error, shown):
    t = Tensor[backend, 2].zeros([1, 3])
    with pytest.raises(error) as err:
        call(t)
    assert shown in str(err.value)


def test_reshape_and_expand_keep_their_sentinels(backend):
    t = Tensor[backend, 2].from_floats([[1.0, 2.0, 3.0]])
    assert t.reshape([-1, 1]).dims() == [3, 1]
    assert t.reshape([0, 3]).dims() == [1, 3]  # Burn: 0 keeps the size
    assert_tensor(t.expand([2, -1]), np.array([[1.0, 2.0, 3.0]] * 2))


def test_shape_and_tensordata_refuse_non_int_sizes():
    assert Shape([2, np.int64(3)]).dims == [2, 3]
    assert Shape(2, 3).dims == [2, 3]
    for bad, error in [([2.7], TypeError), ("12", TypeError), ([-1], ValueError)]:
        with pytest.raises(error, match="Shape"):
            Shape(bad)
    with pytest.raises(TypeError, match=r"TensorData: shape \[2, 1.5\] holds 1.5"):
        TensorData([1.0, 2.0, 3.0], [2, 1.5])


# -- tensor data -------------------------------------------------------------------

@pytest.mark.parametrize("values, shown", [
    ([float("nan"), 1.0], "nan"),
    ([1.0, float("inf")], "inf"),
    ([1.0, -float("inf")], "-inf"),
    ([1e30], "1e+30"),
    ([2.0 ** 63], "9.223372036854776e+18"),
    ([2 ** 63], "9223372036854775808"),
    ([2 ** 64], "18446744073709551616"),
    ([-2 ** 63 - 1], "-9223372036854775809"),
    (np.array([2 ** 64 - 1], dtype=np.uint64), "18446744073709551615"),
    (np.array([np.nan], dtype=np.float32), "nan"),
], ids=["nan", "inf", "-inf", "1e30", "2.0**63", "2**63", "2**64", "-2**63-1", "uint64 max", "f32 nan"])
def test_int_from_data_refuses_values_without_an_i64(backend, values, shown):
    with pytest.raises(ValueRangeError) as err:
        Tensor[backend, 1, Int].from_data(values)
    message = str(err.value)
    assert shown in message and "i64" in message and "ragged" not in message
    assert isinstance(err.value, ValueError)


def test_int_from_data_keeps_the_i64_extremes_exactly(backend):
    extremes = [2 ** 63 - 1, -2 ** 63, 0]
    assert Tensor[backend, 1, Int].from_data(extremes).to_numpy().tolist() == extremes
    as_uint = np.array([2 ** 63 - 1, 5], dtype=np.uint64)
    assert Tensor[backend, 1, Int].from_data(as_uint).to_numpy().tolist() == [2 ** 63 - 1, 5]
    # finite floats in range truncate toward zero, as Burn's convert and torch's .long()
    torch = pytest.importorskip("torch")
    floats = [2.7, -2.7, -2.0 ** 63, 1e18]
    assert_tensor(Tensor[backend, 1, Int].from_data(floats), torch.tensor(floats, dtype=torch.float64).long().numpy())


@pytest.mark.parametrize("kind", [None, Int, Bool], ids=["Float", "Int", "Bool"])
@pytest.mark.parametrize("values", [["12"], [["1", "2"]], np.array(["1.5"]), [1, "a"]],
                         ids=["str", "nested str", "numpy str", "mixed"])
def test_strings_are_never_parsed(backend, kind, values):
    rank = np.array(values).ndim
    T = Tensor[backend, rank] if kind is None else Tensor[backend, rank, kind]
    with pytest.raises(TypeError, match=r"from_data: cannot make (f32|i64|bool) data from <U\d+ values such as"):
        T.from_data(values)
    with pytest.raises(TypeError, match="cannot make"):
        T.from_data(TensorData(values))


def test_big_ints_are_not_called_ragged(backend):
    assert_tensor(Tensor[backend, 1].from_data([2 ** 64, -(2 ** 70)]), np.array([2.0 ** 64, -(2.0 ** 70)]))
    with pytest.raises(ValueRangeError, match=r"10{400} is too large for any float dtype"):
        Tensor[backend, 1].from_data([1, 10 ** 400])
    with pytest.raises(TypeError, match=r"holds None, NoneType, at index \[1\]"):
        Tensor[backend, 1].from_data([1, None])
    with pytest.raises(ValueError, match="ragged"):
        Tensor[backend, 2].from_data([[1, 2], [3]])


def test_float_data_beyond_f32_follows_ieee(backend):
    got = Tensor[backend, 1].from_data(np.array([1e300, -1e300, 1e-300]))
    assert got.to_numpy().tolist() == [float("inf"), float("-inf"), 0.0]


# -- the RuntimeWarning filter ---------------------------------------------------------

_WARNINGS_SCRIPT = textwrap.dedent("""
    import json, warnings
    import numpy as np
    import burnbook
    from burnbook import Tensor
    from burnbook.backend import NdArray

    def caught(fn):
        with warnings.catch_warnings(record=True) as log:
            fn()
        return [str(w.message) for w in log if issubclass(w.category, RuntimeWarning)]

    x = Tensor[NdArray, 1].from_floats([0.0, -1.0, 1e30])
    out = {
        "float": caught(lambda: (x.log(), x.sqrt(), x / 0.0, x / x, x * x, x.exp(), x.recip(),
                                 x.powf_scalar(0.5), x.cos(), x.zeros_like().mean_dim(0))),
        "int_div": caught(lambda: NdArray.int_div(np.array([1]), np.array([0]))),
        "cast": caught(lambda: Tensor[NdArray, 1].from_floats([float("nan")]).int()),
        "user": caught(lambda: np.log(np.zeros(1))),
    }
    print(json.dumps(out))
""")


def test_only_float_op_warnings_are_muted():
    """Run as a reader's notebook does: a fresh interpreter that imports
    burnbook (pytest's own warning capture would drop a filter installed at
    import inside it)."""
    done = subprocess.run([sys.executable, "-c", _WARNINGS_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["float"] == []
    assert any("divide by zero encountered in floor_divide" in m for m in seen["int_div"])
    assert any("invalid value encountered in cast" in m for m in seen["cast"])
    assert any("divide by zero encountered in log" in m for m in seen["user"])  # the reader's own NumPy


@pytest.mark.parametrize("fill, error, shown", [
    (2.5, TypeError, "non-integer scalar 2.5"),
    (2 ** 63, ValueRangeError, "9223372036854775808"),
    (float("nan"), ValueRangeError, "nan"),
    ("1", TypeError, "'1'"),
])
def test_int_full_refuses_fills_without_an_i64(backend, fill, error, shown):
    with pytest.raises(error) as err:
        Tensor[backend, 1, Int].full([2], fill)
    assert "full" in str(err.value) and shown in str(err.value)
    assert Tensor[backend, 1, Int].full([2], 3.0).to_numpy().tolist() == [3, 3]


@pytest.mark.parametrize("args, shown", [((0.5, 3), "start"), ((0, 3.7), "end"), ((0, None), "end"),
                                         ((True, 3), "start")])
def test_arange_takes_ints_only(backend, args, shown):
    with pytest.raises(TypeError, match=f"arange: {shown} must be an int"):
        Tensor[backend, 1, Int].arange(*args)
    with pytest.raises(TypeError, match="arange: step must be an int, got 1.5"):
        Tensor[backend, 1, Int].arange_step(0, 3, 1.5)
