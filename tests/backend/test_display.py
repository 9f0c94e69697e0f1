"""The printed form: exactly the reference notebook's layout, on every backend.

The `device:` and `backend:` lines differ per backend; they are compared with
the tensor's own device and `B.name()`, every other line exactly."""

import numpy as np
import pytest

from burnbook import Bool, Int, Tensor


def expected_print(t, data, shape, kind, dtype):
    return (
        "Tensor {\n"
        "  data:\n"
        f"{data},\n"
        f"  shape:  {shape},\n"
        f"  device:  {t.device()!r},\n"
        f'  backend:  "{t._B.name()}",\n'
        f'  kind:  "{kind}",\n'
        f'  dtype:  "{dtype}",\n'
        "}"
    )


def test_float_vector_prints_as_the_notebook(backend):
    t = Tensor[backend, 1].from_floats([1.0, 2.0, 3.0, 4.0])
    assert str(t) == expected_print(t, "[1.0, 2.0, 3.0, 4.0]", "[4]", "Float", "f32")
    assert repr(t) == str(t)


def test_backend_names(backend):
    if backend.is_autodiff:
        assert backend.name() == f"autodiff<{backend.InnerBackend.name()}>"
    else:
        assert backend.InnerBackend is backend
    t = Tensor[backend, 1].from_floats([1.0])
    assert f'  backend:  "{backend.name()}",' in str(t).splitlines()


def test_matrix_rows_on_their_own_lines(backend):
    t = Tensor[backend, 2].from_floats([[3.0, 4.0], [5.0, 6.0]])
    assert str(t) == expected_print(t, "[[3.0, 4.0],\n [5.0, 6.0]]", "[2, 2]", "Float", "f32")


def test_rank3_indents_by_depth(backend):
    t = Tensor[backend, 3, Int].from_ints([[[1, 2]], [[3, 4]]])
    assert str(t) == expected_print(t, "[[[1, 2]],\n [[3, 4]]]", "[2, 1, 2]", "Int", "i64")


def test_int_and_bool_print(backend):
    i = Tensor[backend, 1, Int].from_ints([-1, 0, 7])
    assert str(i) == expected_print(i, "[-1, 0, 7]", "[3]", "Int", "i64")
    b = Tensor[backend, 1, Bool].from_data([True, False])
    assert str(b) == expected_print(b, "[true, false]", "[2]", "Bool", "bool")


def test_sin_of_square_prints_the_notebook_digits(backend):
    # The reference notebook's chain-rule example: y = sin(x^2), dy/dx = cos(x^2) * 2x.
    x = Tensor[backend, 1].from_floats([0.0, 1.0, 2.0, 3.0])
    y = x.clone().powf_scalar(2.0).sin()
    dy = x.clone().powf_scalar(2.0).cos().mul(x.clone().mul_scalar(2.0))
    lines = ("[0.0, 0.84147096, -0.7568025, 0.4121185],", "[0.0, 1.0806046, -2.6145744, -5.4667816],")
    if getattr(y.device(), "kind", "cpu") in ("vulkan", "metal"):
        # SPIR-V's f32 sin/cos are within a few ulp, not correctly rounded: the
        # values agree to 2 ulp, and print with the shortest digits of their own.
        for t, line in zip((y, dy), lines):
            want = np.array(line.strip("[],").split(", "), np.float32)
            got = t.to_numpy()
            np.testing.assert_array_max_ulp(got, want, maxulp=2)
            digits = (np.format_float_positional(v, unique=True, trim="0") for v in got)
            assert str(t).splitlines()[2] == "[" + ", ".join(digits) + "],"
        return
    assert str(y).splitlines()[2] == lines[0]
    assert str(dy).splitlines()[2] == lines[1]


def test_sum_prints_shape_one(backend):
    t = (Tensor[backend, 1].from_floats([1.0, 2.0, 3.0, 4.0]) * 2.0).sum()
    assert str(t) == expected_print(t, "[20.0]", "[1]", "Float", "f32")


@pytest.mark.parametrize("value, text", [
    (float("nan"), "NaN"), (float("inf"), "inf"), (float("-inf"), "-inf"),
    (1e-7, "1e-7"), (20.0, "20.0"), (0.1, "0.1"), (-0.5, "-0.5"), (1e16, "1e16"),
])
def test_special_float_values(backend, value, text):
    t = Tensor[backend, 1].from_floats([value])
    assert str(t).splitlines()[2] == f"[{text}],"


def test_large_tensor_is_summarised(backend):
    t = Tensor[backend, 1].from_data(np.arange(2000, dtype=np.float32))
    assert str(t).splitlines()[2] == "[0.0, 1.0, 2.0, ..., 1997.0, 1998.0, 1999.0],"


def test_empty_tensor_prints(backend):
    t = Tensor[backend, 2].zeros([0, 3])
    assert str(t) == expected_print(t, "[]", "[0, 3]", "Float", "f32")
