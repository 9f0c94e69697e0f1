"""Tensors with no elements, one case per kind of op: an element-wise op,
broadcasting against size 1, reductions (a sum over nothing is 0), a matmul
with k = 0 (all zeros), cat with an empty part, an empty slice, a reshape.
A backend that launches a kernel per op must not launch zero threads badly
or divide by a zero size."""

from __future__ import annotations

import numpy as np

from ..case import Case, bools, ints, uniform


def _f(*shapes):
    return lambda rng: tuple(uniform(rng, s) for s in shapes)


CASES: list[Case] = [
    Case("float_exp[0x3]", "math", "float_exp", _f((0, 3)), lambda B, d, x: B.float_exp(x), np.exp),
    Case("float_add[0x3,1x3]", "arithmetic", "float_add", _f((0, 3), (1, 3)),
         lambda B, d, x, y: B.float_add(x, y), np.add),
    Case("float_matmul[2x0,0x3]", "arithmetic", "float_matmul", _f((2, 0), (0, 3)),
         lambda B, d, x, y: B.float_matmul(x, y), np.matmul, note="k = 0: a sum of no products, all zeros"),
    Case("float_sum[0x3]", "reductions", "float_sum", _f((0, 3)), lambda B, d, x: B.float_sum(x),
         lambda x: np.sum(x).reshape(1), note="a sum over no elements is 0"),
    Case("float_sum_dim[0x3,dim=0]", "reductions", "float_sum_dim", _f((0, 3)),
         lambda B, d, x: B.float_sum_dim(x, 0), lambda x: np.sum(x, 0, keepdims=True)),
    Case("float_sum_dim[0x3,dim=1]", "reductions", "float_sum_dim", _f((0, 3)),
         lambda B, d, x: B.float_sum_dim(x, 1), lambda x: np.sum(x, 1, keepdims=True)),
    Case("float_cat[0x3+2x3,dim=0]", "layout", "float_cat", _f((0, 3), (2, 3)),
         lambda B, d, x, y: B.float_cat([x, y], 0), lambda x, y: np.concatenate([x, y], 0)),
    Case("float_slice[4x5,[2:2:1]]", "layout", "float_slice", _f((4, 5)),
         lambda B, d, x: B.float_slice(x, (slice(2, 2, 1),)), lambda x: x[2:2]),
    Case("float_reshape[0x3->3x0]", "layout", "float_reshape", _f((0, 3)),
         lambda B, d, x: B.float_reshape(x, (3, 0)), lambda x: x.reshape(3, 0)),
    Case("int_add[0]", "int", "int_add", lambda rng: (ints(rng, (0,)), ints(rng, (0,))),
         lambda B, d, x, y: B.int_add(x, y), np.add),
    Case("bool_not[0]", "bool", "bool_not", lambda rng: (bools(rng, (0,)),),
         lambda B, d, x: B.bool_not(x), np.logical_not),
]
