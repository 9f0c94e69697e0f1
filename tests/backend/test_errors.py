"""Errors a learner can act on: the exception type and what its message names."""

import pytest

from burnbook import Bool, Distribution, Int, Tensor, TensorData

from .oracle import other_backend


def f2(backend, shape=(2, 3)):
    return Tensor[backend, 2].zeros(list(shape))


# -- ranks and shapes --------------------------------------------------------------------------

def test_wrong_rank_for_the_type_names_both_ranks(backend):
    with pytest.raises(ValueError, match=r"rank 3.*rank 2"):
        Tensor[backend, 2].from_data([[[1.0]]])
    with pytest.raises(ValueError, match=r"rank 1.*rank 2"):
        Tensor[backend, 2].from_floats([1.0, 2.0])
    with pytest.raises(ValueError, match="rank"):
        Tensor[backend, 2].zeros([2, 3, 4])


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "powf", "equal", "greater", "lower_equal"])
def test_shapes_that_do_not_broadcast(backend, op):
    with pytest.raises(ValueError, match=rf"{op}.*\[2, 3\].*\[3, 2\]"):
        getattr(f2(backend), op)(f2(backend, (3, 2)))


def test_operators_report_broadcast_errors_too(backend):
    with pytest.raises(ValueError, match=r"add.*\[2, 3\].*\[2, 2\]"):
        f2(backend) + f2(backend, (2, 2))
    ints = Tensor[backend, 1, Int]
    with pytest.raises(ValueError, match=r"\[2\].*\[3\]"):
        ints.zeros([2]) * ints.zeros([3])


def test_different_ranks_name_both_shapes(backend):
    with pytest.raises(ValueError, match=r"add.*\[2, 3\].*\[3\]"):
        f2(backend).add(Tensor[backend, 1].zeros([3]))


def test_mask_that_does_not_broadcast(backend):
    mask = Tensor[backend, 2, Bool].zeros([3, 2])
    with pytest.raises(ValueError, match=r"mask_fill.*\[2, 3\].*\[3, 2\]"):
        f2(backend).mask_fill(mask, 1.0)


def test_bad_reshape_sizes(backend):
    with pytest.raises(ValueError, match=r"reshape.*\[2, 3\].*\[4, 2\]"):
        f2(backend).reshape([4, 2])
    with pytest.raises(ValueError, match="reshape"):
        f2(backend).reshape([-1, -1])
    with pytest.raises(ValueError, match="reshape"):
        f2(backend).reshape([4, -1])


def test_matmul_inner_dim_mismatch(backend):
    with pytest.raises(ValueError, match=r"matmul.*\[2, 3\].*\[2, 3\]"):
        f2(backend).matmul(f2(backend))


def test_cat_and_stack_shape_mismatch(backend):
    with pytest.raises(ValueError, match=r"cat.*\[2, 2\].*\[2, 3\]"):
        Tensor.cat([f2(backend), f2(backend, (2, 2))], 0)
    with pytest.raises(ValueError, match=r"stack.*\[2, 2\].*\[2, 3\]"):
        Tensor.stack([f2(backend), f2(backend, (2, 2))], 0)


def test_squeeze_of_a_dim_larger_than_one(backend):
    with pytest.raises(ValueError, match=r"squeeze.*size 3"):
        f2(backend).squeeze(1)


def test_slice_assign_with_wrong_value_shape(backend):
    with pytest.raises(ValueError, match=r"slice_assign.*\[1, 1\].*\[2, 2\]"):
        f2(backend).slice_assign([(0, 2), (0, 2)], f2(backend, (1, 1)))


def test_tensordata_values_must_fill_the_shape(backend):
    with pytest.raises(ValueError, match=r"3 values.*\[2, 2\]"):
        TensorData([1.0, 2.0, 3.0], [2, 2])


def test_ragged_data(backend):
    with pytest.raises(ValueError, match="ragged"):
        Tensor[backend, 2].from_floats([[1.0, 2.0], [3.0]])


# -- kinds and backends ------------------------------------------------------------------------

FLOAT_ONLY = ["exp", "log", "log1p", "erf", "sqrt", "recip", "cos", "sin", "tanh"]


@pytest.mark.parametrize("kind", [Int, Bool])
@pytest.mark.parametrize("op", FLOAT_ONLY)
def test_float_only_ops_on_other_kinds(backend, kind, op):
    t = Tensor[backend, 1, kind].zeros([2])
    with pytest.raises(TypeError, match=rf"{op}.*{kind.name}"):
        getattr(t, op)()


@pytest.mark.parametrize("call", [
    lambda t: t.matmul(t), lambda t: t.var(0), lambda t: t.var_mean_bias(0), lambda t: t.to_full_precision(),
], ids=["matmul", "var", "var_mean_bias", "to_full_precision"])
def test_float_only_composites_on_int(backend, call):
    with pytest.raises(TypeError, match=r"Int"):
        call(Tensor[backend, 2, Int].zeros([2, 2]))


def test_bool_not_on_a_float_tensor(backend):
    with pytest.raises(TypeError, match=r"bool_not.*Float"):
        Tensor[backend, 1].zeros([2]).bool_not()


def test_kinds_mixed_in_one_op(backend):
    with pytest.raises(TypeError, match=r"Float.*Int"):
        Tensor[backend, 1].zeros([2]) + Tensor[backend, 1, Int].zeros([2])


def test_two_backends_mixed_in_one_op(backend):
    other = other_backend(backend)
    a, b = Tensor[backend, 1].zeros([2]), Tensor[other, 1].zeros([2])
    names = rf"({backend.name()}.*{other.name()}|{other.name()}.*{backend.name()})"
    for op in (lambda: a + b, lambda: a.matmul(b), lambda: Tensor.cat([a, b], 0), lambda: a.equal(b)):
        with pytest.raises(TypeError, match=names):
            op()


def test_backward_on_a_plain_backend(backend):
    if backend.is_autodiff:
        pytest.skip("plain backends only")
    y = Tensor[backend, 1].from_floats([1.0]).require_grad().sum()
    with pytest.raises(TypeError, match=r"Autodiff\["):
        y.backward()


def test_int_division_by_scalar_zero(backend):
    with pytest.raises(ZeroDivisionError):
        Tensor[backend, 1, Int].from_ints([1, 2]) / 0


def test_non_integer_scalar_on_int_tensor(backend):
    with pytest.raises(TypeError, match=r"Int.*2.5"):
        Tensor[backend, 1, Int].from_ints([1]).mul_scalar(2.5)


# -- dims and indices --------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda t: t.sum_dim(2), lambda t: t.mean_dim(-3), lambda t: t.argmax(5), lambda t: t.swap_dims(0, 2),
    lambda t: t.narrow(2, 0, 1), lambda t: t.unsqueeze_dim(4), lambda t: t.flatten(0, 3),
    lambda t: t.repeat(-3, 2), lambda t: Tensor.cat([t, t], 2), lambda t: t.var(2),
], ids=["sum_dim", "mean_dim", "argmax", "swap_dims", "narrow", "unsqueeze_dim", "flatten", "repeat", "cat", "var"])
def test_out_of_range_dims(backend, call):
    with pytest.raises(IndexError, match=r"dim -?\d+ is out of range.*rank"):
        call(f2(backend))


def test_out_of_range_slices_and_indices(backend):
    t = f2(backend)
    with pytest.raises(IndexError, match=r"index 2.*dim 0 of size 2"):
        t[2]
    with pytest.raises(IndexError, match=r"index -3.*size 2"):
        t[-3]
    with pytest.raises(IndexError, match=r"range 1..5.*dim 1 of size 3"):
        t.slice([(0, 1), (1, 5)])
    with pytest.raises(IndexError, match=r"3 ranges.*rank 2"):
        t.slice([(0, 1), (0, 1), (0, 1)])
    with pytest.raises(IndexError, match=r"narrow.*out of bounds"):
        t.narrow(1, 2, 2)


def test_out_of_range_gather_select_scatter_indices(backend):
    t = f2(backend)
    idx = Tensor[backend, 2, Int].from_ints([[0, 3, 1], [0, 0, 0]])
    with pytest.raises(IndexError, match=r"gather.*index 3.*size 3"):
        t.gather(1, idx)
    with pytest.raises(IndexError, match=r"scatter.*index 3.*size 3"):
        t.scatter(1, idx, t)
    with pytest.raises(IndexError, match=r"select.*index -1.*size 2"):
        t.select(0, Tensor[backend, 1, Int].from_ints([0, -1]))
    with pytest.raises(IndexError, match=r"select_assign.*index 2.*size 2"):
        t.select_assign(0, Tensor[backend, 1, Int].from_ints([2]), Tensor[backend, 2].zeros([1, 3]))
    with pytest.raises(IndexError, match=r"one_hot.*index 5.*3 classes"):
        Tensor[backend, 1, Int].from_ints([5]).one_hot(3)
    with pytest.raises(IndexError, match=r"one_hot.*index 3.*3 classes"):
        Tensor[backend, 1].one_hot(3, 3)


def test_indices_must_be_int_tensors(backend):
    t = f2(backend)
    with pytest.raises(TypeError, match=r"gather.*Int"):
        t.gather(1, t)
    with pytest.raises(TypeError, match=r"mask.*Bool"):
        t.mask_fill(t, 0.0)


def test_into_scalar_on_many_elements(backend):
    with pytest.raises(ValueError, match=r"into_scalar.*6 elements.*\[2, 3\]"):
        f2(backend).into_scalar()


def test_reductions_of_empty_tensors_without_identity(backend):
    empty = Tensor[backend, 1].zeros([0])
    for op in (empty.max, empty.min):
        with pytest.raises(ValueError, match=r"empty"):
            op()


def test_bad_creation_arguments(backend):
    with pytest.raises(ValueError, match=r"negative size"):
        Tensor[backend, 1].zeros([-1])
    with pytest.raises(ValueError, match=r"step"):
        Tensor[backend, 1, Int].arange_step(0, 5, 0)
    with pytest.raises(ValueError, match=r"rank-1|rank 1"):
        Tensor[backend, 2, Int].arange(0, 5)
    with pytest.raises(ValueError, match=r"Uniform.*low"):
        Distribution.Uniform(2.0, 1.0)
    with pytest.raises(ValueError, match=r"Bernoulli.*\[0, 1\]"):
        Distribution.Bernoulli(1.5)
    with pytest.raises(TypeError, match=r"rank"):
        Tensor[backend, 0]
