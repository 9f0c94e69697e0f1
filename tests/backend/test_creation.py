"""Creation and data access: constructors, TensorData, NumPy interop, scalars,
queries, and tensors with zero-size dims."""

import numpy as np
import pytest

from burnbook import Bool, Float, Int, Tensor, TensorData

from .oracle import assert_tensor, tensor


# -- constructors -----------------------------------------------------------------------

def test_from_floats_keeps_values_and_shape(backend, device):
    t = Tensor[backend, 2].from_floats([[1.0, 2.0], [3.0, 4.5]], device)
    assert_tensor(t, np.array([[1.0, 2.0], [3.0, 4.5]]))


def test_type_is_also_the_constructor(backend):
    assert_tensor(Tensor[backend, 1]([1.0, 2.0]), np.array([1.0, 2.0]))


def test_from_ints_and_from_bool(backend, device):
    assert_tensor(Tensor[backend, 1, Int].from_ints([1, -2, 3], device), np.array([1, -2, 3]))
    assert_tensor(Tensor[backend, 2, Bool].from_data([[True, False]], device), np.array([[True, False]]))
    assert_tensor(Tensor[backend, 1, Bool].from_bool([False, True], device), np.array([False, True]))


@pytest.mark.parametrize("kind, values, expected", [
    (Float, [1, 2], np.array([1.0, 2.0])),        # ints become f32
    (Int, [1.0, -2.0], np.array([1, -2])),         # floats become i64
    (Float, [True, False], np.array([1.0, 0.0])),
])
def test_from_data_converts_to_the_kind(backend, kind, values, expected):
    assert_tensor(Tensor[backend, 1, kind].from_data(values), expected, kind=kind)


def test_from_data_with_tensordata_values_and_shape(backend):
    data = TensorData([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])
    assert data.shape == [2, 3]
    assert_tensor(Tensor[backend, 2].from_data(data), np.arange(1.0, 7.0).reshape(2, 3))


def test_from_data_copies_the_source(backend):
    source = np.array([1.0, 2.0], dtype=np.float32)
    t = Tensor[backend, 1].from_data(source)
    source[0] = 99.0
    assert t.to_numpy().tolist() == [1.0, 2.0]


@pytest.mark.parametrize("kind, fill, dtype", [(Float, 2.5, np.float32), (Int, 7, np.int64), (Bool, True, np.bool_)])
def test_full_zeros_ones(backend, device, kind, fill, dtype):
    T = Tensor[backend, 2, kind]
    assert_tensor(T.full([2, 3], fill, device), np.full((2, 3), fill, dtype))
    assert_tensor(T.zeros([2, 3], device), np.zeros((2, 3), dtype))
    assert_tensor(T.ones([3, 1], device), np.ones((3, 1), dtype))


@pytest.mark.parametrize("kind", [Float, Int, Bool])
def test_empty_has_shape_and_kind(backend, device, kind):
    t = Tensor[backend, 3, kind].empty([2, 1, 3], device)
    assert t.dims() == [2, 1, 3] and t.kind is kind


def test_like_constructors(backend):
    t = Tensor[backend, 2].from_floats([[5.0, 6.0, 7.0]])
    assert_tensor(t.zeros_like(), np.zeros((1, 3)))
    assert_tensor(t.ones_like(), np.ones((1, 3)))
    assert t.random_like().dims() == [1, 3]
    i = Tensor[backend, 1, Int].from_ints([4, 5])
    assert_tensor(i.ones_like(), np.array([1, 1]))


def test_arange_and_arange_step(backend, device):
    T = Tensor[backend, 1, Int]
    assert_tensor(T.arange(5, 10, device), np.array([5, 6, 7, 8, 9]))
    assert_tensor(T.arange(range(5, 10)), np.array([5, 6, 7, 8, 9]))
    assert_tensor(T.arange_step(5, 10, 2, device), np.array([5, 7, 9]))
    assert_tensor(T.arange(3, 3), np.zeros(0, np.int64))


def test_one_hot_constructor_and_method(backend, device):
    assert_tensor(Tensor[backend, 1].one_hot(2, 5, device), np.array([0.0, 0.0, 1.0, 0.0, 0.0]))
    indices = Tensor[backend, 1, Int].from_ints([0, 2, 1])
    assert_tensor(indices.one_hot(3), np.eye(3, dtype=np.int64)[[0, 2, 1]])
    floats = Tensor[backend, 1].from_floats([1.0, 0.0])
    assert_tensor(floats.one_hot(2), np.array([[0.0, 1.0], [1.0, 0.0]]))


# -- data out ------------------------------------------------------------------------------

@pytest.mark.parametrize("values, dtype", [([1.5, -2.0], np.float32), ([3, -4], np.int64), ([True, False], np.bool_)])
def test_to_numpy_and_asarray_dtypes(backend, values, dtype):
    t = tensor(backend, np.array(values, dtype))
    assert t.to_numpy().dtype == dtype
    assert np.asarray(t).dtype == dtype
    assert np.asarray(t).tolist() == values


def test_to_numpy_is_a_copy(backend):
    t = Tensor[backend, 1].from_floats([1.0, 2.0])
    t.to_numpy()[0] = 42.0
    assert t.to_numpy().tolist() == [1.0, 2.0]


def test_into_data_and_to_data(backend):
    t = Tensor[backend, 2].from_floats([[1.0, 2.0], [3.0, 4.0]])
    for data in (t.to_data(), t.into_data()):
        assert isinstance(data, TensorData)
        assert data.shape == [2, 2] and data.value == [1.0, 2.0, 3.0, 4.0]
        assert str(data.dtype) == "f32"
    assert t.to_data() == TensorData([1.0, 2.0, 3.0, 4.0], [2, 2]).convert(np.float32)
    assert Tensor[backend, 2].from_data(TensorData.from_numpy(t.to_numpy())).to_numpy().tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("values, expected, kind_type", [([2.5], 2.5, float), ([-3], -3, int), ([True], True, bool)])
def test_into_scalar_returns_a_python_number(backend, values, expected, kind_type):
    t = tensor(backend, np.array(values))
    value = t.into_scalar()
    assert type(value) is kind_type and value == expected


def test_into_scalar_of_a_reduction(backend):
    t = Tensor[backend, 2].from_floats([[1.0, 2.0], [3.0, 4.0]])
    assert t.sum().into_scalar() == 10.0


# -- queries -------------------------------------------------------------------------------------

def test_dims_shape_and_rank(backend):
    t = Tensor[backend, 3].zeros([2, 3, 4])
    assert t.dims() == [2, 3, 4]
    assert t.shape == [2, 3, 4] and t.shape() == [2, 3, 4]
    assert t.shape.num_elements() == 24 and t.num_elements() == 24
    assert t.ndim == 3


def test_device_and_to_device(backend, device):
    t = Tensor[backend, 1].from_floats([1.0, 2.0], device)
    assert t.device() == device
    moved = t.to_device(device)
    assert moved.device() == device
    assert_tensor(moved, np.array([1.0, 2.0]))


def test_dtype_names(backend):
    assert str(Tensor[backend, 1].zeros([1]).dtype) == "f32"
    assert str(Tensor[backend, 1, Int].zeros([1]).dtype) == "i64"
    assert str(Tensor[backend, 1, Bool].zeros([1]).dtype) == "bool"


def test_clone_and_primitive_round_trip(backend):
    t = Tensor[backend, 1].from_floats([1.0, 2.0])
    assert_tensor(t.clone(), np.array([1.0, 2.0]))
    back = Tensor[backend, 1].from_primitive(t.into_primitive())
    assert_tensor(back, np.array([1.0, 2.0]))


def test_full_precision_round_trip(backend):
    t = Tensor[backend, 1].from_floats([1.5, -2.0])
    full = t.to_full_precision()
    assert str(full.dtype) == "f32"
    assert_tensor(Tensor[backend, 1].from_full_precision(full), np.array([1.5, -2.0]))


# -- zero-size dims -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", [Float, Int, Bool])
def test_zero_size_creation(backend, kind):
    assert Tensor[backend, 2, kind].zeros([0, 3]).dims() == [0, 3]
    assert Tensor[backend, 2, kind].from_data(np.zeros((2, 0))).dims() == [2, 0]


def test_zero_size_elementwise_reshape_cat_sum(backend):
    e = Tensor[backend, 2].zeros([0, 3])
    assert_tensor(e + 1.0, np.zeros((0, 3)))
    assert_tensor((e * e).exp(), np.zeros((0, 3)))
    assert_tensor(e.reshape([3, 0]), np.zeros((3, 0)))
    full = Tensor[backend, 2].ones([2, 3])
    assert_tensor(Tensor.cat([e, full, e], 0), np.ones((2, 3)))
    assert_tensor(e.sum(), np.array([0.0]))
    assert_tensor(e.sum_dim(0), np.zeros((1, 3)))
    assert_tensor(Tensor[backend, 1, Int].zeros([0]).sum(), np.array([0]))
