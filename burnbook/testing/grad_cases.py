"""The differentiable-op cases of `check_autodiff`: for each op with a
gradient, a small function of Float primitives built around that op, and
inputs drawn away from kinks (relu, abs, clamp at 0 or their bounds) and
ties (max, min), so central finite differences are exact enough.

`fn(B, *xs)` gets an autodiff backend `B` and its Float primitives and
returns one Float primitive; Int and Bool arguments (indices, masks) are made
inside with `B.int_from_data` / `B.bool_from_data` (listed in `uses`).
"""

from __future__ import annotations

import numpy as np

from .case import GradCase

_RNG_SHAPES = ((2, 3), (4,), (2, 1, 3))


def _u(lo=-1.0, hi=1.0):
    return lambda rng, s: rng.uniform(lo, hi, size=s)


def _away(lo=0.3, hi=1.2):
    return lambda rng, s: rng.uniform(lo, hi, size=s) * rng.choice([-1.0, 1.0], size=s)


def _distinct(rng, s):
    n = int(np.prod(s))
    return (rng.permutation(n) * 0.1 - 0.05 * n + rng.uniform(0, 0.02, n)).reshape(s)


def _one(make, shape):
    return lambda rng: (make(rng, shape),)


def _sid(*shapes):
    return ",".join("x".join(map(str, s)) for s in shapes)


def _int(B, a):
    return B.int_from_data(np.asarray(a, dtype=np.int64), B.default_device())


def _bool(B, a):
    return B.bool_from_data(np.asarray(a, dtype=np.bool_), B.default_device())


GRAD_CASES: list[GradCase] = []


def _add(name, family, op, inputs, fn, uses=()):
    GRAD_CASES.append(GradCase(name, family, op, inputs, fn, tuple(uses)))


# -- math: element-wise unary --------------------------------------------------------------
_UNARY = {"exp": _u(), "log": _u(0.3, 2.0), "log1p": _u(-0.5, 2.0), "erf": _u(-1.5, 1.5),
          "sqrt": _u(0.3, 2.0), "recip": _away(), "cos": _u(-3, 3), "sin": _u(-3, 3),
          "tanh": _u(-2, 2), "relu": _away(), "sigmoid": _u(-6, 6)}
for _name, _make in _UNARY.items():
    for _s in _RNG_SHAPES[:2]:
        _add(f"float_{_name}[{_sid(_s)}]", "math", f"float_{_name}", _one(_make, _s),
             (lambda op: lambda B, x: getattr(B, op)(x))(f"float_{_name}"))

# -- arithmetic ------------------------------------------------------------------------------
_BINARY = {"add": (_u(), _u()), "sub": (_u(), _u()), "mul": (_u(), _u()), "div": (_u(), _away(0.5, 1.5)),
           "powf": (_u(0.5, 2.0), _u(-1.5, 2.5))}
for _name, (_ma, _mb) in _BINARY.items():
    for _a, _b in (((2, 3), (2, 3)), ((2, 3), (1, 3)), ((3, 1), (1, 2))):
        _add(f"float_{_name}[{_sid(_a, _b)}]", "arithmetic", f"float_{_name}",
             (lambda a, b, ma, mb: lambda rng: (ma(rng, a), mb(rng, b)))(_a, _b, _ma, _mb),
             (lambda op: lambda B, x, y: getattr(B, op)(x, y))(f"float_{_name}"))
_add("float_add[same input]", "arithmetic", "float_add", _one(_u(), (5,)),
     lambda B, x: B.float_mul(B.float_add(x, x), x), uses=("float_mul",))
for _name, _s, _make in (("add_scalar", 1.5, _u()), ("sub_scalar", 0.7, _u()), ("mul_scalar", -2.5, _u()),
                         ("div_scalar", 4.0, _u()), ("powf_scalar", 3.0, _u(0.4, 2.0)),
                         ("powf_scalar", 0.5, _u(0.4, 2.0))):
    _add(f"float_{_name}[2x3,{_s}]", "arithmetic", f"float_{_name}", _one(_make, (2, 3)),
         (lambda op, s: lambda B, x: getattr(B, op)(x, s))(f"float_{_name}", _s))
_add("float_neg[2x3]", "arithmetic", "float_neg", _one(_u(), (2, 3)), lambda B, x: B.float_neg(x))
_add("float_abs[2x3]", "arithmetic", "float_abs", _one(_away(), (2, 3)), lambda B, x: B.float_abs(x))
_add("float_clamp[3x4,-0.5,0.5]", "arithmetic", "float_clamp",
     lambda rng: (rng.choice([-0.9, -0.2, 0.1, 0.7], size=(3, 4)) + rng.uniform(-0.05, 0.05, (3, 4)),),
     lambda B, x: B.float_clamp(x, -0.5, 0.5))
for _a, _b in (((2, 3), (3, 4)), ((2, 2, 3), (1, 3, 2)), ((1, 3), (3, 1))):
    _add(f"float_matmul[{_sid(_a, _b)}]", "arithmetic", "float_matmul",
         (lambda a, b: lambda rng: (_u()(rng, a), _u()(rng, b)))(_a, _b), lambda B, x, y: B.float_matmul(x, y))

# -- reductions ------------------------------------------------------------------------------
_add("float_sum[2x3]", "reductions", "float_sum", _one(_u(), (2, 3)), lambda B, x: B.float_sum(x))
for _op in ("float_sum_dim", "float_mean_dim"):
    for _d in (0, 1):
        _add(f"{_op}[2x3,dim={_d}]", "reductions", _op, _one(_u(), (2, 3)),
             (lambda op, d: lambda B, x: getattr(B, op)(x, d))(_op, _d))
for _op in ("float_max", "float_min"):
    _add(f"{_op}[2x3]", "reductions", _op, _one(_distinct, (2, 3)), (lambda op: lambda B, x: getattr(B, op)(x))(_op))
for _op in ("float_max_dim", "float_min_dim"):
    _add(f"{_op}[2x3,dim=1]", "reductions", _op, _one(_distinct, (2, 3)),
         (lambda op: lambda B, x: getattr(B, op)(x, 1))(_op))

# -- layout ------------------------------------------------------------------------------------
_L = "layout"
_add("float_reshape[2x3->3x2]", _L, "float_reshape", _one(_u(), (2, 3)), lambda B, x: B.float_reshape(x, (3, 2)))
_add("float_swap_dims[2x3x2,0,2]", _L, "float_swap_dims", _one(_u(), (2, 3, 2)),
     lambda B, x: B.float_swap_dims(x, 0, 2))
_add("float_permute[2x3x2,(1,2,0)]", _L, "float_permute", _one(_u(), (2, 3, 2)),
     lambda B, x: B.float_permute(x, (1, 2, 0)))
_add("float_expand[2x1x3->2x4x3]", _L, "float_expand", _one(_u(), (2, 1, 3)),
     lambda B, x: B.float_expand(x, (2, 4, 3)))
_add("float_slice[4x5]", _L, "float_slice", _one(_u(), (4, 5)),
     lambda B, x: B.float_slice(x, (slice(3, 0, -1), slice(0, 5, 2))))
_add("float_slice_assign[4x5]", _L, "float_slice_assign",
     lambda rng: (_u()(rng, (4, 5)), _u()(rng, (2, 3))),
     lambda B, x, v: B.float_slice_assign(x, (slice(1, 3, 1), slice(0, 5, 2)), v))
_add("float_cat[2x3+1x3]", _L, "float_cat", lambda rng: (_u()(rng, (2, 3)), _u()(rng, (1, 3))),
     lambda B, x, y: B.float_cat([x, y, x], 0))

# -- indexing ----------------------------------------------------------------------------------
_I = "indexing"
_IDX = np.array([[0, 2], [1, 1], [2, 0]])
_add("float_gather[3x4,dim=1]", _I, "float_gather", _one(_u(), (3, 4)),
     lambda B, x: B.float_gather(1, x, _int(B, _IDX)), uses=("int_from_data",))
_add("float_scatter[3x4,dim=1]", _I, "float_scatter", lambda rng: (_u()(rng, (3, 4)), _u()(rng, (3, 2))),
     lambda B, x, v: B.float_scatter(1, x, _int(B, _IDX), v), uses=("int_from_data",))
_add("float_select[3x4,dim=0]", _I, "float_select", _one(_u(), (3, 4)),
     lambda B, x: B.float_select(x, 0, _int(B, [2, 0, 2])), uses=("int_from_data",))
_add("float_select_assign[3x4,dim=1]", _I, "float_select_assign",
     lambda rng: (_u()(rng, (3, 4)), _u()(rng, (3, 3))),
     lambda B, x, v: B.float_select_assign(x, 1, _int(B, [3, 0, 3]), v), uses=("int_from_data",))
_MASK = np.array([[True, False, True], [False, False, True]])
_add("float_mask_where[2x3]", _I, "float_mask_where", lambda rng: (_u()(rng, (2, 3)), _u()(rng, (2, 3))),
     lambda B, x, v: B.float_mask_where(x, _bool(B, _MASK), v), uses=("bool_from_data",))
_add("float_mask_fill[2x3]", _I, "float_mask_fill", _one(_u(), (2, 3)),
     lambda B, x: B.float_mask_fill(x, _bool(B, _MASK), 0.5), uses=("bool_from_data",))

# -- creation: a dtype or device change passes the gradient through ------------------------------
_add("float_to_device[2x3]", "creation", "float_to_device", _one(_u(), (2, 3)),
     lambda B, x: B.float_to_device(x, B.float_device(x)), uses=("float_device",))

# -- module ops ----------------------------------------------------------------------------------
_M = "module"


def _conv_opts(n, **kw):
    from ..backend.module_options import ConvOptions
    return ConvOptions(**kw).resolved(n)


def _conv_t_opts(n, **kw):
    from ..backend.module_options import ConvTransposeOptions
    return ConvTransposeOptions(**kw).resolved(n)


_O2 = _conv_opts(2, stride=(2, 1), padding=(1, 1), dilation=(1, 1), groups=1)
_O1 = _conv_opts(1, stride=(1,), padding=(1,), dilation=(2,), groups=2)
_OT = _conv_t_opts(2, stride=(2, 2), padding=(1, 0), padding_out=(1, 0), dilation=(1, 1), groups=1)
_add("conv2d[1x2x4x4,w3x2x3x3,bias]", _M, "conv2d",
     lambda rng: (_u()(rng, (1, 2, 4, 4)), _u()(rng, (3, 2, 3, 3)), _u()(rng, (3,))),
     lambda B, x, w, b: B.conv2d(x, w, b, _O2))
_add("conv1d[2x2x5,w2x1x2,groups 2]", _M, "conv1d",
     lambda rng: (_u()(rng, (2, 2, 5)), _u()(rng, (2, 1, 2))), lambda B, x, w: B.conv1d(x, w, None, _O1))
_add("conv_transpose2d[1x2x3x2,w2x2x2x2]", _M, "conv_transpose2d",
     lambda rng: (_u()(rng, (1, 2, 3, 2)), _u()(rng, (2, 2, 2, 2)), _u()(rng, (2,))),
     lambda B, x, w, b: B.conv_transpose2d(x, w, b, _OT))
_add("avg_pool2d[1x2x5x4,k3,s2,p1]", _M, "avg_pool2d", _one(_u(), (1, 2, 5, 4)),
     lambda B, x: B.avg_pool2d(x, (3, 3), (2, 2), (1, 1), False))
_add("max_pool2d[1x2x4x5,k2,s1,p1]", _M, "max_pool2d", _one(_distinct, (1, 2, 4, 5)),
     lambda B, x: B.max_pool2d(x, (2, 2), (1, 1), (1, 1), (1, 1), False))
_add("adaptive_avg_pool2d[1x2x5x4->2x3]", _M, "adaptive_avg_pool2d", _one(_u(), (1, 2, 5, 4)),
     lambda B, x: B.adaptive_avg_pool2d(x, (2, 3)))
_add("embedding[5x3,2x3]", _M, "embedding", _one(_u(), (5, 3)),
     lambda B, w: B.embedding(w, _int(B, [[0, 4, 0], [2, 2, 1]])), uses=("int_from_data",))
_OT1 = _conv_t_opts(1, stride=(2,), padding=(1,), padding_out=(1,), dilation=(1,), groups=1)
_add("conv_transpose1d[2x2x3,w2x3x3]", _M, "conv_transpose1d",
     lambda rng: (_u()(rng, (2, 2, 3)), _u()(rng, (2, 3, 3))), lambda B, x, w: B.conv_transpose1d(x, w, None, _OT1))
_add("avg_pool1d[2x2x7,k3,s2,p1]", _M, "avg_pool1d", _one(_u(), (2, 2, 7)),
     lambda B, x: B.avg_pool1d(x, (3,), (2,), (1,), True))
_add("adaptive_avg_pool1d[2x2x7->3]", _M, "adaptive_avg_pool1d", _one(_u(), (2, 2, 7)),
     lambda B, x: B.adaptive_avg_pool1d(x, (3,)))
_add("max_pool2d_with_indices[1x2x5x4,k3,s2]", _M, "max_pool2d_with_indices", _one(_distinct, (1, 2, 5, 4)),
     lambda B, x: B.max_pool2d_with_indices(x, (3, 3), (2, 2), (0, 0), (1, 1), True)[0])
_add("max_pool1d[2x2x7,k2,s2,p1]", _M, "max_pool1d", _one(_distinct, (2, 2, 7)),
     lambda B, x: B.max_pool1d(x, (2,), (2,), (1,), (1,), False))
_add("max_pool1d_with_indices[2x2x6,k3,s1]", _M, "max_pool1d_with_indices", _one(_distinct, (2, 2, 6)),
     lambda B, x: B.max_pool1d_with_indices(x, (3,), (1,), (0,), (1,), False)[0])
_CAUSAL = np.triu(np.ones((3, 3), bool), k=1)[None, None]
_add("attention[2x2x3x4,causal]", _M, "attention",
     lambda rng: (_u()(rng, (2, 2, 3, 4)), _u()(rng, (2, 2, 3, 4)), _u()(rng, (2, 2, 3, 5))),
     lambda B, q, k, v: B.attention(q, k, v, B.bool_expand(_bool(B, _CAUSAL), (2, 1, 3, 3)), 0.5, -1.0e4),
     uses=("bool_from_data", "bool_expand"))
_add("layer_norm[2x3x4]", _M, "layer_norm",
     lambda rng: (_u(-2, 2)(rng, (2, 3, 4)), _u(0.5, 1.5)(rng, (4,)), _u()(rng, (4,))),
     lambda B, x, g, b: B.float_mul(B.layer_norm(x, g, b, 1e-5), x))   # times x: a non-uniform output grad
_add("gelu[2x3]", _M, "gelu", _one(_u(-3, 3), (2, 3)), lambda B, x: B.gelu(x))
_add("float_cast[2x3,round trip]", "creation", "float_cast", _one(_u(), (2, 3)),
     lambda B, x: B.float_cast(B.float_cast(x, np.float64), B.float_dtype(x)))
