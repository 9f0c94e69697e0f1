"""One case per differentiable float op: how to build inputs (random shapes
from an rng), the op on an Autodiff backend, and the same op in torch.

Used by the finite-difference suite (every op, f32 and f64) and the
torch.autograd suite (forward and backward on several random shapes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Case:
    id: str
    op: str                  # the FLOAT_OPS entry it covers
    gen: Callable            # rng -> (list of float arrays, ctx dict)
    fn: Callable             # (B, ctx, *xs) -> primitive
    torch: Callable | None   # (ctx, *ts) -> torch tensor


def shape(rng, rank=None, lo=1, hi=4):
    rank = int(rng.integers(1, 4)) if rank is None else rank
    return tuple(int(s) for s in rng.integers(lo, hi + 1, size=rank))


def bshapes(rng, rank=None):
    """Two shapes that broadcast against each other (size 1 on either side)."""
    s = shape(rng, rank, 2, 3)
    a, b = list(s), list(s)
    for d in range(len(s)):
        r = rng.random()
        if r < 0.25:
            a[d] = 1
        elif r < 0.5:
            b[d] = 1
    return tuple(a), tuple(b)


def u(rng, s, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=s)


def away0(rng, s, lo=0.3, hi=1.2):
    return rng.uniform(lo, hi, size=s) * rng.choice([-1.0, 1.0], size=s)


def distinct(rng, s):
    """Values far apart (no ties, gaps >> eps) for max/min."""
    n = int(np.prod(s))
    return (rng.permutation(n) * 0.1 - 0.05 * n + rng.uniform(0, 0.02, n)).reshape(s)


def _i(B, a):
    return B.int_from_data(np.asarray(a, dtype=np.int64), B.default_device())


def _b(B, a):
    return B.bool_from_data(np.asarray(a, dtype=np.bool_), B.default_device())


def _ti(ctx, k):
    import torch
    return torch.as_tensor(ctx[k])


CASES: list[Case] = []


def case(id, op, gen, fn, torch_fn=None):
    CASES.append(Case(id, op, gen, fn, torch_fn))


def one(gen_arr):
    return lambda rng: ([gen_arr(rng)], {})


# -- unary math -----------------------------------------------------------------
_UNARY = {
    "exp": (lambda r: u(r, shape(r)), "exp"),
    "log": (lambda r: u(r, shape(r), 0.3, 2.0), "log"),
    "log1p": (lambda r: u(r, shape(r), -0.5, 2.0), "log1p"),
    "erf": (lambda r: u(r, shape(r), -1.5, 1.5), "erf"),
    "sqrt": (lambda r: u(r, shape(r), 0.3, 2.0), "sqrt"),
    "recip": (lambda r: away0(r, shape(r)), "reciprocal"),
    "cos": (lambda r: u(r, shape(r), -3, 3), "cos"),
    "sin": (lambda r: u(r, shape(r), -3, 3), "sin"),
    "tanh": (lambda r: u(r, shape(r), -2, 2), "tanh"),
    "relu": (lambda r: away0(r, shape(r)), "relu"),
    "sigmoid": (lambda r: u(r, shape(r), -6, 6), "sigmoid"),
    "neg": (lambda r: u(r, shape(r)), "neg"),
    "abs": (lambda r: away0(r, shape(r)), "abs"),
}
for _name, (_gen, _tname) in _UNARY.items():
    case(_name, f"float_{_name}", one(_gen),
         (lambda n: lambda B, c, x: getattr(B, f"float_{n}")(x))(_name),
         (lambda t: lambda c, x: getattr(x, t)())(_tname))

# -- arithmetic -------------------------------------------------------------------
_BIN = {
    "add": (lambda r, s: u(r, s), lambda r, s: u(r, s), lambda a, b: a + b),
    "sub": (lambda r, s: u(r, s), lambda r, s: u(r, s), lambda a, b: a - b),
    "mul": (lambda r, s: u(r, s), lambda r, s: u(r, s), lambda a, b: a * b),
    "div": (lambda r, s: u(r, s), lambda r, s: away0(r, s, 0.5, 1.5), lambda a, b: a / b),
    "powf": (lambda r, s: u(r, s, 0.5, 2.0), lambda r, s: u(r, s, -1.5, 2.5), lambda a, b: a ** b),
}
for _name, (_ga, _gb, _tf) in _BIN.items():
    def _gen(rng, _ga=_ga, _gb=_gb):
        sa, sb = bshapes(rng)
        return [_ga(rng, sa), _gb(rng, sb)], {}
    case(_name, f"float_{_name}", _gen,
         (lambda n: lambda B, c, x, y: getattr(B, f"float_{n}")(x, y))(_name),
         (lambda f: lambda c, x, y: f(x, y))(_tf))

case("add_self", "float_add", one(lambda r: u(r, shape(r))),
     lambda B, c, x: B.float_mul(B.float_add(x, x), x), lambda c, x: (x + x) * x)

_SCALAR = {
    "add_scalar": (1.5, lambda x, s: x + s), "sub_scalar": (0.7, lambda x, s: x - s),
    "mul_scalar": (-2.5, lambda x, s: x * s), "div_scalar": (4.0, lambda x, s: x / s),
}
for _name, (_s, _tf) in _SCALAR.items():
    case(_name, f"float_{_name}", one(lambda r: u(r, shape(r))),
         (lambda n, s: lambda B, c, x: getattr(B, f"float_{n}")(x, s))(_name, _s),
         (lambda f, s: lambda c, x: f(x, s))(_tf, _s))

for _s in (2.0, 3.0, 0.5, -1.5, 0.0, 1.0):
    case(f"powf_scalar_{_s}", "float_powf_scalar", one(lambda r: u(r, shape(r), 0.4, 2.0)),
         (lambda s: lambda B, c, x: B.float_powf_scalar(x, s))(_s),
         (lambda s: lambda c, x: x ** s)(_s))

for _lo, _hi in ((-0.5, 0.5), (None, 0.2), (-0.3, None)):
    case(f"clamp_{_lo}_{_hi}", "float_clamp",
         one(lambda r: r.choice([-1.0, 1.0], size=(3, 4)) * r.choice([0.1, 0.35, 0.7, 0.9], size=(3, 4))
             + r.uniform(-0.02, 0.02, size=(3, 4))),
         (lambda lo, hi: lambda B, c, x: B.float_clamp(x, lo, hi))(_lo, _hi),
         (lambda lo, hi: lambda c, x: x.clamp(lo, hi))(_lo, _hi))

# -- reductions -------------------------------------------------------------------
case("sum", "float_sum", one(lambda r: u(r, shape(r))), lambda B, c, x: B.float_sum(x),
     lambda c, x: x.sum().reshape(1))


def _dim_gen(rng, values=u):
    s = shape(rng)
    return [values(rng, s)], {"dim": int(rng.integers(0, len(s)))}


case("sum_dim", "float_sum_dim", _dim_gen, lambda B, c, x: B.float_sum_dim(x, c["dim"]),
     lambda c, x: x.sum(c["dim"], keepdim=True))
case("mean_dim", "float_mean_dim", _dim_gen, lambda B, c, x: B.float_mean_dim(x, c["dim"]),
     lambda c, x: x.mean(c["dim"], keepdim=True))
case("max", "float_max", one(lambda r: distinct(r, shape(r))), lambda B, c, x: B.float_max(x),
     lambda c, x: x.max().reshape(1))
case("min", "float_min", one(lambda r: distinct(r, shape(r))), lambda B, c, x: B.float_min(x),
     lambda c, x: x.min().reshape(1))
case("max_dim", "float_max_dim", lambda r: _dim_gen(r, distinct),
     lambda B, c, x: B.float_max_dim(x, c["dim"]), lambda c, x: x.max(c["dim"], keepdim=True)[0])
case("min_dim", "float_min_dim", lambda r: _dim_gen(r, distinct),
     lambda B, c, x: B.float_min_dim(x, c["dim"]), lambda c, x: x.min(c["dim"], keepdim=True)[0])

# -- linear algebra -------------------------------------------------------------------


def _mm_gen(rng):
    batch = int(rng.integers(0, 3))
    m, k, n = (int(v) for v in rng.integers(1, 4, size=3))
    ba, bb = bshapes(rng, batch) if batch else ((), ())
    return [u(rng, ba + (m, k)), u(rng, bb + (k, n))], {}


case("matmul", "float_matmul", _mm_gen, lambda B, c, x, y: B.float_matmul(x, y),
     lambda c, x, y: x @ y)
case("cast", "float_cast", one(lambda r: u(r, shape(r))),
     lambda B, c, x: B.float_exp(B.float_cast(B.float_cast(x, np.float64), B.float_dtype(x))),
     lambda c, x: x.double().to(x.dtype).exp())
case("to_device", "float_to_device", one(lambda r: u(r, shape(r))),
     lambda B, c, x: B.float_sin(B.float_to_device(x, B.float_device(x))), lambda c, x: x.sin())

# -- layout -------------------------------------------------------------------------------


def _rank3(rng):
    return [u(rng, shape(rng, 3, 2, 3))], {"perm": tuple(int(v) for v in rng.permutation(3))}


case("reshape", "float_reshape", _rank3,
     lambda B, c, x: B.float_reshape(x, (int(np.prod(B.float_shape(x))),)),
     lambda c, x: x.reshape(-1))
case("swap_dims", "float_swap_dims", _rank3, lambda B, c, x: B.float_swap_dims(x, 0, 2),
     lambda c, x: x.transpose(0, 2))
case("permute", "float_permute", _rank3, lambda B, c, x: B.float_permute(x, c["perm"]),
     lambda c, x: x.permute(*c["perm"]))
case("expand", "float_expand", lambda r: ([u(r, (2, 1, 3, 1))], {}),
     lambda B, c, x: B.float_expand(x, (2, 4, 3, 2)), lambda c, x: x.expand(2, 4, 3, 2))
_RANGES = (slice(3, 0, -1), slice(0, 5, 2))
case("slice", "float_slice", lambda r: ([u(r, (4, 5))], {}),
     lambda B, c, x: B.float_slice(x, _RANGES), lambda c, x: x.flip(0)[0:3, 0:5:2])
case("slice_lead", "float_slice", lambda r: ([u(r, (4, 3, 2))], {}),
     lambda B, c, x: B.float_slice(x, (slice(1, 3, 1),)), lambda c, x: x[1:3])
_REGION = (slice(1, 3, 1), slice(1, 4, 1))
case("slice_assign", "float_slice_assign", lambda r: ([u(r, (4, 5)), u(r, (2, 3))], {}),
     lambda B, c, x, v: B.float_slice_assign(x, _REGION, v),
     lambda c, x, v: _torch_slice_assign(x, v))
case("cat", "float_cat",
     lambda r: ([u(r, (2, 1, 3)), u(r, (2, 3, 3)), u(r, (2, 2, 3))], {}),
     lambda B, c, x, y, z: B.float_cat([x, y, z], 1), lambda c, x, y, z: _torch().cat([x, y, z], 1))


def _torch():
    import torch
    return torch


def _torch_slice_assign(x, v):
    out = x.clone()
    out[1:3, 1:4] = v
    return out


# -- indexing ----------------------------------------------------------------------------------
_IDX = np.array([[0, 2], [3, 3], [1, 0]])   # row 1 repeats an index: gradients add
case("gather", "float_gather", lambda r: ([u(r, (3, 4))], {"i": _IDX}),
     lambda B, c, x: B.float_gather(1, x, _i(B, c["i"])),
     lambda c, x: x.gather(1, _ti(c, "i")))
case("scatter", "float_scatter", lambda r: ([u(r, (3, 4)), u(r, (3, 2))], {"i": _IDX}),
     lambda B, c, x, v: B.float_scatter(1, x, _i(B, c["i"]), v),
     lambda c, x, v: x.scatter_add(1, _ti(c, "i"), v))
_SEL = np.array([2, 0, 2])
case("select", "float_select", lambda r: ([u(r, (4, 3))], {"i": _SEL}),
     lambda B, c, x: B.float_select(x, 0, _i(B, c["i"])),
     lambda c, x: x.index_select(0, _ti(c, "i")))
case("select_assign", "float_select_assign", lambda r: ([u(r, (4, 3)), u(r, (3, 3))], {"i": _SEL}),
     lambda B, c, x, v: B.float_select_assign(x, 0, _i(B, c["i"]), v),
     lambda c, x, v: x.index_add(0, _ti(c, "i"), v))


def _mask_gen(rng, vshape=(3, 4)):
    return [u(rng, (3, 4)), u(rng, vshape)], {"m": rng.random((3, 4)) < 0.5}


case("mask_where", "float_mask_where", _mask_gen,
     lambda B, c, x, v: B.float_mask_where(x, _b(B, c["m"]), v),
     lambda c, x, v: _torch().where(_ti(c, "m"), v, x))
case("mask_where_bcast", "float_mask_where", lambda r: _mask_gen(r, (1, 4)),
     lambda B, c, x, v: B.float_mask_where(x, _b(B, c["m"]), v),
     lambda c, x, v: _torch().where(_ti(c, "m"), v, x))
case("mask_fill", "float_mask_fill", lambda r: ([u(r, (3, 4))], {"m": r.random((3, 4)) < 0.5}),
     lambda B, c, x: B.float_mask_fill(x, _b(B, c["m"]), 2.5),
     lambda c, x: x.masked_fill(_ti(c, "m"), 2.5))

# Ops with no gradient (creation, reading, comparisons, arg-extremes, into_int).
NOT_DIFFERENTIABLE = {
    "float_from_data", "float_into_data", "float_empty", "float_full", "float_random",
    "float_shape", "float_device", "float_dtype", "float_equal", "float_greater",
    "float_greater_equal", "float_lower", "float_lower_equal", "float_equal_elem",
    "float_greater_elem", "float_greater_equal_elem", "float_lower_elem",
    "float_lower_equal_elem", "float_argmax", "float_argmin", "float_into_int",
}
