"""Seeded random tensor programs, run on a burnbook backend and on PyTorch at
once, and compared value by value (forward) and leaf by leaf (gradients).

A program starts from a random leaf (mostly Float, else Int or Bool, with
exact zeros and ties now and then) and applies a chain of random ops (element-wise math, same-rank broadcasting, keep-rank reductions,
layout ops with negative-step slices, gather/scatter/select, matmul,
activations, comparisons and masks, Int and Bool ops). Each op runs on both
sides: the burnbook tensor and a float32 torch tensor written the torch way.
Where Burn's semantics differ from torch's defaults, the torch side encodes
Burn's (noted at the op): reductions keep the rank, `var` is unbiased, Int
division truncates toward zero, `max_dim`'s gradient goes to the first
arg-max, `scatter` and `select_assign` add.

Ops with a kink or a decision (relu, abs, clamp, comparisons, arg-max, float
to int) are skipped when a value lies within rounding distance of the kink:
f32 results of different but correct implementations may fall on either side.

Run by hand to measure agreement over more programs:

    .venv/bin/python -m tests.backend.fuzz_programs --seeds 5 --programs 400
"""

from __future__ import annotations

import argparse
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from burnbook import Bool, Float, Int, Tensor
from burnbook.tensor import activation as act

KINDS = {"f": Float, "i": Int, "b": Bool}
NP_DTYPES = {"f": np.float32, "i": np.int64, "b": np.bool_}


class Skip(Exception):
    """The op does not apply to this value (a guard failed); try another."""


class Mismatch(AssertionError):
    """burnbook and torch disagree."""


@dataclass
class Val:
    """One value of the program on both sides."""

    b: Any  # burnbook Tensor
    t: torch.Tensor
    kind: str  # "f", "i" or "b"

    @property
    def shape(self) -> list:
        return list(self.t.shape)

    @property
    def rank(self) -> int:
        return self.t.dim()


class Program:
    """One random program on `backend`, drawn from `rng`; `trace` lists its ops."""

    def __init__(self, backend: Any, rng: np.random.Generator) -> None:
        self.B = backend
        self.rng = rng
        self.grad = backend.is_autodiff
        self.leaves: list[Val] = []
        self.values: list[Val] = []
        self.trace: list[str] = []

    # -- values ------------------------------------------------------------------
    def leaf(self, shape: list, kind: str = "f", lo: float = -3.0, hi: float = 3.0) -> Val:
        r = self.rng
        if kind == "f":
            arr = r.uniform(lo, hi, size=shape).astype(np.float32)
            u = r.random()
            if u < 0.3:  # exact zeros, as relu outputs and padding make them
                arr[r.random(size=shape) < 0.3] = 0.0
            elif u < 0.45:  # exact ties
                arr = np.round(arr * 2) / 2
        elif kind == "i":
            arr = r.integers(-6, 7, size=shape).astype(np.int64)
        else:
            arr = r.random(size=shape) < 0.5
        b = Tensor[self.B, len(shape), KINDS[kind]].from_data(arr)
        t = torch.tensor(arr)
        if kind == "f" and self.grad:
            b, t = b.require_grad(), t.requires_grad_(True)
            self.leaves.append(Val(b, t, kind))
        shown = arr.tolist() if arr.size <= 64 else f"<{arr.size} values, seeded>"
        self.trace.append(f"leaf {kind}{shape} = {shown}")
        return Val(b, t, kind)

    def apply(self, name: str, fb: Callable, ft: Callable, kind: str | None, *vals: Val) -> Val:
        """Run `fb` on the burnbook tensors and `ft` on the torch ones. When
        torch refuses, burnbook must refuse too (the op is then dropped)."""
        self.trace.append(name)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's var of an empty dim, say
                t = ft(*[v.t for v in vals])
        except (RuntimeError, IndexError, ValueError) as terr:
            try:
                fb(*[v.b for v in vals])
            except (ValueError, IndexError, TypeError):  # the project's errors subclass these
                raise Skip(name) from None
            except Exception as err:  # noqa: BLE001 - a refusal, but no clear error
                raise Mismatch(f"{name}: torch raises ({terr}), burnbook {type(err).__name__}: {err}") from err
            raise Mismatch(f"{name}: torch raises ({terr}), burnbook returns a value") from None
        try:
            b = fb(*[v.b for v in vals])
        except Exception as err:
            raise Mismatch(f"{name}: burnbook raises {type(err).__name__}: {err}") from err
        if kind is None:
            kind = {torch.bool: "b", torch.int64: "i"}.get(t.dtype, "f")
        out = Val(b, t, kind)
        check(out, name)
        if kind == "f" and not bool(torch.isfinite(t).all()):
            # Checked, but not built on: gradients through NaN (the mean of
            # nothing, say) are conventions, not math.
            raise Skip("non-finite")
        self.values.append(out)
        return out

    # -- random draws ------------------------------------------------------------
    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def dim(self, v: Val) -> int:
        d = int(self.rng.integers(v.rank))
        return d - v.rank if self.rng.random() < 0.3 else d

    def partner_shape(self, shape: list) -> list:
        """A shape of the same rank that broadcasts with `shape` (Burn: same rank)."""
        out = []
        for s in shape:
            u = self.rng.random()
            if s == 1:
                out.append(1 if u < 0.5 else int(self.rng.integers(1, 4)))
            else:
                out.append(1 if u < 0.25 else s)
        return out

    def partner(self, v: Val, kind: str = "f", broadcast: bool = True) -> Val:
        """Another value for a binary op: an earlier one whose shape fits, or a new leaf."""
        fits = [w for w in self.values if w.kind == kind and w.rank == v.rank
                and (w.shape == v.shape or broadcast and _broadcasts(w.shape, v.shape))]
        if fits and self.rng.random() < 0.4:
            return self.pick(fits)
        return self.leaf(self.partner_shape(v.shape) if broadcast else v.shape, kind)


def _broadcasts(a: list, b: list) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(a, b))


# -- comparison ------------------------------------------------------------------
def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    if got.shape != want.shape:
        return False
    if want.dtype.kind != "f":
        return bool(np.array_equal(got, want))
    scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
    return bool(np.allclose(got, want, rtol=rtol, atol=atol * max(scale, 1.0), equal_nan=True))


def check(v: Val, name: str) -> None:
    """The burnbook value has torch's shape, kind and values."""
    b = v.b
    if b.kind is not KINDS[v.kind]:
        raise Mismatch(f"{name}: kind {b.kind.name}, torch gives {v.kind}")
    if b.dims() != v.shape:
        raise Mismatch(f"{name}: shape {b.dims()}, torch gives {v.shape}")
    got, want = b.to_numpy(), _np(v.t)
    if got.dtype != NP_DTYPES[v.kind]:
        raise Mismatch(f"{name}: dtype {got.dtype}")
    if not close(got, want, 2e-4, 2e-5):
        raise Mismatch(f"{name}: values differ\n  burnbook {got.tolist()}\n  torch    {want.tolist()}")


# -- guards ----------------------------------------------------------------------
def _sides(v: Val) -> tuple:
    """The value on both sides as float64 arrays (torch's, burnbook's)."""
    return _np(v.t).astype(np.float64), v.b.to_numpy().astype(np.float64)


def _margin(a: np.ndarray) -> float:
    return 1e-3 * max(1.0, float(np.abs(a).max(initial=0.0)))


def _near(dt: np.ndarray, db: np.ndarray, margin: float) -> bool:
    """Some distance is small but not zero on either side, or zero on one side only."""
    dt, db = np.abs(dt), np.abs(db)
    return bool((((dt > 0) & (dt < margin)) | ((db > 0) & (db < margin)) | ((dt == 0) != (db == 0))).any())


def clear_of(v: Val, c: float, minus: Val | None = None) -> None:
    """Every value of `v` (or of v - minus) is, on both sides, exactly `c`
    or clearly away from it."""
    t, b = _sides(v)
    if minus is not None:
        mt, mb = _sides(minus)
        t, b = t - mt, b - mb
    if _near(t - c, b - c, _margin(t)):
        raise Skip("near a kink")


def clear_ties(v: Val, dim: int) -> None:
    """Along `dim`, the extreme values are, on both sides, exact ties or clearly apart."""
    t, b = _sides(v)
    if t.size == 0 or t.shape[dim] < 2:
        return
    m = _margin(t)
    st, sb = np.sort(t, axis=dim), np.sort(b, axis=dim)
    n = t.shape[dim]
    for lo, hi in ((n - 1, n - 2), (0, 1)):
        gt = np.take(st, lo, axis=dim) - np.take(st, hi, axis=dim)
        gb = np.take(sb, lo, axis=dim) - np.take(sb, hi, axis=dim)
        if _near(gt, gb, m):
            raise Skip("near tie")


def bounded(v: Val, limit: float = 1e3) -> None:
    if v.kind != "b" and v.t.numel() and float(v.t.detach().abs().max()) > limit:
        raise Skip("too large")


# -- the ops ---------------------------------------------------------------------
# Each op takes (program, value) and returns a new Val (or raises Skip).
FLOAT_OPS: list[Callable] = []
INT_OPS: list[Callable] = []
BOOL_OPS: list[Callable] = []
ANY_OPS: list[Callable] = []


def op(*families):
    """Register an op in each family listed; a family listed twice draws it twice as often."""
    def deco(fn):
        for fam in families:
            fam.append(fn)
        return fn
    return deco


def _sq1(x):
    return x * x + 1.0


UNARY = {
    "neg": (lambda b: b.neg(), lambda t: -t),
    "exp": (lambda b: b.exp(), torch.exp),
    "log(x^2+1)": (lambda b: _sq1(b).log(), lambda t: _sq1(t).log()),
    "log1p(x^2)": (lambda b: b.mul(b).log1p(), lambda t: (t * t).log1p()),
    "sqrt(x^2+1)": (lambda b: _sq1(b).sqrt(), lambda t: _sq1(t).sqrt()),
    "recip(x^2+1)": (lambda b: _sq1(b).recip(), lambda t: _sq1(t).reciprocal()),
    "sin": (lambda b: b.sin(), torch.sin),
    "cos": (lambda b: b.cos(), torch.cos),
    "tanh": (lambda b: b.tanh(), torch.tanh),
    "erf": (lambda b: b.erf(), torch.erf),
    "sigmoid": (lambda b: b.sigmoid(), torch.sigmoid),
    "gelu": (act.gelu, torch.nn.functional.gelu),
    "silu": (act.silu, torch.nn.functional.silu),
    "mish": (act.mish, torch.nn.functional.mish),
    "log_sigmoid": (act.log_sigmoid, torch.nn.functional.logsigmoid),
    "1/(x^2+1) (rdiv)": (lambda b: 1.0 / _sq1(b), lambda t: 1.0 / _sq1(t)),
    "2-x (rsub)": (lambda b: 2.0 - b, lambda t: 2.0 - t),
    "x**2": (lambda b: b ** 2, lambda t: t ** 2),
    "powi_scalar(3)": (lambda b: b.powi_scalar(3), lambda t: t ** 3),
    "powi_scalar(0)": (lambda b: b.powi_scalar(0), lambda t: t ** 0),
    "powf_scalar(x^2+1, -1.5)": (lambda b: _sq1(b).powf_scalar(-1.5), lambda t: _sq1(t) ** -1.5),
    "powf_scalar(x^2+1, 0.5)": (lambda b: _sq1(b).powf_scalar(0.5), lambda t: _sq1(t) ** 0.5),
}


@op(FLOAT_OPS, FLOAT_OPS, FLOAT_OPS, FLOAT_OPS)
def unary(p: Program, v: Val) -> Val:
    name = p.pick(sorted(UNARY))
    if name in ("exp", "powi_scalar(3)", "x**2"):
        bounded(v, 20.0)
    fb, ft = UNARY[name]
    return p.apply(name, fb, ft, "f", v)


@op(FLOAT_OPS)
def kinked(p: Program, v: Val) -> Val:
    name = p.pick(["abs", "relu", "leaky_relu", "hard_sigmoid", "sign"])
    if name == "hard_sigmoid":
        clear_of(v, 2.5)
        clear_of(v, -2.5)
        return p.apply(name, act.hard_sigmoid, lambda t: (0.2 * t + 0.5).clamp(0.0, 1.0), "f", v)
    clear_of(v, 0.0)
    fns = {"abs": (lambda b: b.abs(), torch.abs), "relu": (act.relu, torch.relu),
           "leaky_relu": (lambda b: act.leaky_relu(b, 0.1), lambda t: torch.nn.functional.leaky_relu(t, 0.1)),
           "sign": (lambda b: b.sign(), torch.sign)}
    return p.apply(name, *fns[name], "f", v)


@op(FLOAT_OPS)
def softplus(p: Program, v: Val) -> Val:
    beta = p.pick([1.0, 2.0, 0.5])
    # Above beta*x = 20 torch returns x; Burn's exact formula differs by < 1e-8 there.
    return p.apply(f"softplus(beta={beta})", lambda b: act.softplus(b, beta),
                   lambda t: torch.nn.functional.softplus(t, beta), "f", v)


@op(FLOAT_OPS)
def scalar_arith(p: Program, v: Val) -> Val:
    s = float(np.float32(p.rng.uniform(-2, 2)))
    name = p.pick(["add_scalar", "sub_scalar", "mul_scalar", "div_scalar", "+", "*"])
    if name == "div_scalar" and abs(s) < 0.1:
        s = 0.5
    fns = {"add_scalar": (lambda b: b.add_scalar(s), lambda t: t + s),
           "sub_scalar": (lambda b: b.sub_scalar(s), lambda t: t - s),
           "mul_scalar": (lambda b: b.mul_scalar(s), lambda t: t * s),
           "div_scalar": (lambda b: b.div_scalar(s), lambda t: t / s),
           "+": (lambda b: b + s, lambda t: t + s),
           "*": (lambda b: s * b, lambda t: s * t)}
    return p.apply(f"{name}({s})", *fns[name], "f", v)


@op(FLOAT_OPS, FLOAT_OPS, FLOAT_OPS)
def binary(p: Program, v: Val) -> Val:
    w = p.partner(v)
    name = p.pick(["add", "sub", "mul", "div", "powf", "-", "/"])
    fns = {"add": (lambda a, b: a.add(b), torch.add),
           "sub": (lambda a, b: a.sub(b), torch.sub),
           "mul": (lambda a, b: a.mul(b), torch.mul),
           "div": (lambda a, b: a.div(_sq1(b)), lambda a, b: a / _sq1(b)),
           "powf": (lambda a, b: _sq1(a).powf(b.tanh()), lambda a, b: _sq1(a) ** b.tanh()),
           "-": (lambda a, b: a - b, lambda a, b: a - b),
           "/": (lambda a, b: a / _sq1(b), lambda a, b: a / _sq1(b))}
    if name == "mul":
        bounded(v, 1e2)
        bounded(w, 1e2)
    return p.apply(f"{name}(·, {w.shape})", *fns[name], "f", v, w)


@op(FLOAT_OPS)
def clamp(p: Program, v: Val) -> Val:
    lo, hi = sorted(float(np.float32(x)) for x in p.rng.uniform(-2, 2, size=2))
    if p.rng.random() < 0.3 and v.t.numel():  # exact hits on a bound: its gradient passes (torch, Burn)
        flat = v.t.detach().reshape(-1)
        lo, hi = sorted((float(flat[0]), float(flat[-1]) + 0.5))
    which = p.pick(["clamp", "clamp_min", "clamp_max"])
    clear_of(v, lo)
    clear_of(v, hi)
    if which == "clamp":
        return p.apply(f"clamp({lo}, {hi})", lambda b: b.clamp(lo, hi), lambda t: t.clamp(lo, hi), None, v)
    if which == "clamp_min":
        return p.apply(f"clamp_min({lo})", lambda b: b.clamp_min(lo), lambda t: t.clamp(min=lo), None, v)
    return p.apply(f"clamp_max({hi})", lambda b: b.clamp_max(hi), lambda t: t.clamp(max=hi), None, v)


@op(FLOAT_OPS, FLOAT_OPS)
def reduce(p: Program, v: Val) -> Val:
    d = p.dim(v)
    name = p.pick(["sum", "mean", "sum_dim", "mean_dim", "var", "var_bias", "max", "min", "max_dim", "min_dim",
                   "softmax", "log_softmax", "quiet_softmax"])
    if name == "sum":
        return p.apply("sum", lambda b: b.sum(), lambda t: t.sum().reshape(1), "f", v)
    if name == "mean":
        return p.apply("mean", lambda b: b.mean(), lambda t: t.mean().reshape(1), "f", v)
    if name == "sum_dim":
        return p.apply(f"sum_dim({d})", lambda b: b.sum_dim(d), lambda t: t.sum(d, keepdim=True), "f", v)
    if name == "mean_dim":
        return p.apply(f"mean_dim({d})", lambda b: b.mean_dim(d), lambda t: t.mean(d, keepdim=True), "f", v)
    if name in ("var", "var_bias"):
        if v.shape[d] < 2:
            raise Skip("var of one value")
        c = 1 if name == "var" else 0  # Burn's `var` is the unbiased one
        return p.apply(f"{name}({d})", lambda b: getattr(b, name)(d),
                       lambda t: t.var(d, correction=c, keepdim=True), "f", v)
    if name in ("max", "min"):
        # Burn (and torch's amax) share the gradient evenly between tied extremes.
        if v.t.numel():
            clear_ties(Val(v.b.reshape([1, -1]), v.t.reshape(1, -1), v.kind), 1)
        fn = torch.amax if name == "max" else torch.amin
        return p.apply(name, lambda b: getattr(b, name)(), lambda t: fn(t).reshape(1), "f", v)
    if name in ("max_dim", "min_dim"):
        clear_ties(v, d)
        # Burn's max_dim sends the gradient to the first arg-max along `dim`.
        arg = torch.argmax if name == "max_dim" else torch.argmin
        return p.apply(f"{name}({d})", lambda b: getattr(b, name)(d),
                       lambda t: t.gather(d, arg(t.detach(), d, keepdim=True)), "f", v)
    if name == "quiet_softmax":
        # exp(x) / (1 + sum exp(x)): softmax with an extra zero logit, dropped.
        def quiet(t):
            pad = list(t.shape)
            pad[d] = 1
            z = torch.cat([t, torch.zeros(pad)], d)
            return torch.softmax(z, d).narrow(d, 0, t.shape[d])
        return p.apply(f"quiet_softmax({d})", lambda b: act.quiet_softmax(b, d), quiet, "f", v)
    fb = act.softmax if name == "softmax" else act.log_softmax
    ft = torch.softmax if name == "softmax" else torch.log_softmax
    return p.apply(f"{name}({d})", lambda b: fb(b, d), lambda t: ft(t, d), "f", v)


@op(FLOAT_OPS, INT_OPS)
def arg_extreme(p: Program, v: Val) -> Val:
    d = p.dim(v)
    name = p.pick(["argmax", "argmin", "max_dim_with_indices", "min_dim_with_indices"])
    clear_ties(v, d)
    # torch.argmax gives the first of tied maxima, as Burn does.
    arg = torch.argmax if name in ("argmax", "max_dim_with_indices") else torch.argmin
    if name in ("argmax", "argmin"):
        return p.apply(f"{name}({d})", lambda b: getattr(b, name)(d),
                       lambda t: arg(t, d, keepdim=True), "i", v)
    out = p.apply(f"{name}({d})", lambda b: getattr(b, name)(d)[0],
                  lambda t: t.gather(d, arg(t.detach(), d, keepdim=True)), v.kind, v)
    p.apply(f"{name}({d})[1]", lambda b: getattr(b, name)(d)[1], lambda t: arg(t, d, keepdim=True), "i", v)
    return out


@op(FLOAT_OPS)
def matmul(p: Program, v: Val) -> Val:
    if v.rank < 2:
        raise Skip("matmul needs rank 2")
    bounded(v, 1e2)
    batch = p.partner_shape(v.shape[:-2])
    w = p.leaf(batch + [v.shape[-1], int(p.rng.integers(1, 4))])
    return p.apply(f"matmul(·, {w.shape})", lambda a, b: a.matmul(b), torch.matmul, "f", v, w)


@op(FLOAT_OPS, INT_OPS)
def compare(p: Program, v: Val) -> Val:
    name = p.pick(["greater", "greater_equal", "lower", "lower_equal", "equal", "not_equal"])
    tfn = {"greater": torch.gt, "greater_equal": torch.ge, "lower": torch.lt, "lower_equal": torch.le,
           "equal": torch.eq, "not_equal": torch.ne}[name]
    if p.rng.random() < 0.5:
        w = p.partner(v, v.kind)
        clear_of(v, 0.0, minus=w)
        return p.apply(f"{name}(·, {w.shape})", lambda a, b: getattr(a, name)(b), tfn, "b", v, w)
    if v.kind == "i":
        s = int(p.rng.integers(-5, 6))
    else:
        s = float(np.float32(p.rng.uniform(-2, 2)))
        if p.rng.random() < 0.3 and v.t.numel():
            s = float(v.t.detach().reshape(-1)[0])  # an exact hit, so equal can be true
        clear_of(v, s)
    return p.apply(f"{name}_elem({s})", lambda a: getattr(a, name + "_elem")(s), lambda t: tfn(t, s), "b", v)


def _mask_for(p: Program, v: Val, same_shape: bool = False) -> Val:
    fits = [w for w in p.values if w.kind == "b" and w.rank == v.rank
            and all(m == s or m == 1 for m, s in zip(w.shape, v.shape))]
    if fits and p.rng.random() < 0.5:
        return p.pick(fits)
    shape = [s if same_shape or p.rng.random() < 0.7 else 1 for s in v.shape]
    return p.leaf(shape, "b")


@op(FLOAT_OPS, INT_OPS)
def mask(p: Program, v: Val) -> Val:
    m = _mask_for(p, v)
    if p.rng.random() < 0.5:
        if v.kind == "i":
            s = int(p.rng.integers(-5, 6))
        else:
            s = float(np.float32(p.rng.uniform(-2, 2)))
        return p.apply(f"mask_fill({m.shape}, {s})", lambda a, mb: a.mask_fill(mb, s),
                       lambda t, mt: t.masked_fill(mt, s), v.kind, v, m)
    w = p.partner(v, v.kind)
    return p.apply(f"mask_where({m.shape}, {w.shape})", lambda a, mb, b: a.mask_where(mb, b),
                   lambda t, mt, u: torch.where(mt, u, t), v.kind, v, m, w)


@op(FLOAT_OPS, INT_OPS)
def triangle(p: Program, v: Val) -> Val:
    if v.rank < 2:
        raise Skip("triangles need rank 2")
    k = int(p.rng.integers(-2, 3))
    if p.rng.random() < 0.5:
        return p.apply(f"triu({k})", lambda b: b.triu(k), lambda t: torch.triu(t, k), v.kind, v)
    return p.apply(f"tril({k})", lambda b: b.tril(k), lambda t: torch.tril(t, k), v.kind, v)


@op(FLOAT_OPS)
def to_int(p: Program, v: Val) -> Val:
    bounded(v, 1e3)
    t, b = _sides(v)  # no value within rounding distance of an integer
    if _near(t - np.round(t), b - np.round(b), _margin(t)):
        raise Skip("near an integer")
    # Both truncate toward zero.
    return p.apply("int()", lambda b: b.int(), lambda t: t.detach().to(torch.int64), "i", v)


@op(FLOAT_OPS)
def powers(p: Program, v: Val) -> Val:
    name = p.pick(["powi(int tensor)", "** tensor", "2 ** x", "powf(tensor)"])
    if name == "powi(int tensor)":
        e = p.leaf(p.partner_shape(v.shape), "i")
        return p.apply(f"powi(x^2+1, {e.shape})", lambda a, k: _sq1(a).powi(k.clamp(-2, 2)),
                       lambda a, k: _sq1(a) ** k.clamp(-2, 2).float(), "f", v, e)
    if name == "2 ** x":
        bounded(v, 20.0)
        return p.apply(name, lambda a: 2.0 ** a, lambda a: 2.0 ** a, "f", v)
    w = p.partner(v)
    return p.apply(f"{name}(x^2+1, tanh {w.shape})", lambda a, b: _sq1(a) ** b.tanh(),
                   lambda a, b: _sq1(a) ** b.tanh(), "f", v, w)


@op(FLOAT_OPS)
def var_mean(p: Program, v: Val) -> Val:
    d = p.dim(v)
    if v.shape[d] < 2:
        raise Skip("var of one value")
    bias = p.rng.random() < 0.5
    name = "var_mean_bias" if bias else "var_mean"
    c = 0 if bias else 1
    p.apply(f"{name}({d})[1]", lambda b: getattr(b, name)(d)[1], lambda t: t.mean(d, keepdim=True), "f", v)
    return p.apply(f"{name}({d})[0]", lambda b: getattr(b, name)(d)[0],
                   lambda t: t.var(d, correction=c, keepdim=True), "f", v)


@op(FLOAT_OPS, INT_OPS)
def like(p: Program, v: Val) -> Val:
    name = p.pick(["zeros_like", "ones_like", "full_like", "detach", "self-op"])
    if name == "detach":
        return p.apply(name, lambda b: b.detach(), lambda t: t.detach(), v.kind, v)
    if name == "self-op":  # one value used twice: the graph joins again
        return p.apply("x * x + x", lambda b: b * b + b, lambda t: t * t + t, v.kind, v)
    if name == "full_like":
        s = 3 if v.kind == "i" else 1.5
        return p.apply(f"full_like({s})", lambda b: b.full_like(s), lambda t: torch.full_like(t, s), v.kind, v)
    return p.apply(name, lambda b: getattr(b, name)(), getattr(torch, name), v.kind, v)


@op(FLOAT_OPS, INT_OPS)
def refused(p: Program, v: Val) -> Val:
    """Inputs torch refuses (shapes that do not broadcast, indices out of
    range): burnbook must refuse them too, and `apply` drops the op."""
    name = p.pick(["add", "gather", "select", "matmul"])
    if name == "add":
        shape = [s + 1 if s > 1 else 2 for s in v.shape]
        w = p.leaf(shape, v.kind)
        return p.apply(f"add(·, {shape}) refused", lambda a, b: a.add(b), torch.add, v.kind, v, w)
    d = p.dim(v)
    size = v.shape[d]
    bad = p.pick([size, size + 2, -1])
    if name == "select":
        idx = Val(Tensor[p.B, 1, Int].from_data(np.array([0, bad])), torch.tensor([0, bad]), "i")
        return p.apply(f"select({d}, [0, {bad}]) refused", lambda b, i: b.select(d, i),
                       lambda t, i: t.index_select(d, i), v.kind, v, idx)
    if name == "gather":
        arr = np.zeros(v.shape, np.int64)
        if arr.size == 0:
            raise Skip("empty")
        arr.reshape(-1)[-1] = bad
        idx = Val(Tensor[p.B, v.rank, Int].from_data(arr), torch.tensor(arr), "i")
        return p.apply(f"gather({d}, {arr.tolist()}) refused", lambda b, i: b.gather(d, i),
                       lambda t, i: t.gather(d, i), v.kind, v, idx)
    if v.rank < 2 or v.kind != "f":
        raise Skip("matmul")
    w = p.leaf(v.shape[:-2] + [v.shape[-1] + 1, 2])
    return p.apply(f"matmul(·, {w.shape}) refused", lambda a, b: a.matmul(b), torch.matmul, "f", v, w)


# -- Int -------------------------------------------------------------------------
@op(INT_OPS)
def int_more(p: Program, v: Val) -> Val:
    name = p.pick(["mean", "remainder_scalar", "remainder", "one_hot", "sign"])
    if name == "mean":
        # Burn's Int mean truncates toward zero.
        if v.t.numel() == 0:
            raise Skip("empty")
        return p.apply("mean", lambda b: b.mean(),
                       lambda t: torch.div(t.sum(), t.numel(), rounding_mode="trunc").reshape(1), "i", v)
    if name == "remainder_scalar":
        s = p.pick([2, 3, -2, -5])
        return p.apply(f"remainder_scalar({s})", lambda b: b.remainder_scalar(s),
                       lambda t: torch.remainder(t, s), "i", v)
    if name == "remainder":
        w = p.leaf(v.shape, "i")
        return p.apply(f"remainder(·, |{w.shape}|+1)", lambda a, b: a.remainder(b.abs().add_scalar(1)),
                       lambda a, b: torch.remainder(a, b.abs() + 1), "i", v, w)
    if name == "sign":
        return p.apply("sign", lambda b: b.sign(), torch.sign, "i", v)
    if v.rank != 1 or v.t.numel() == 0 or int(v.t.min()) < 0 or int(v.t.max()) > 8:
        raise Skip("one_hot needs small non-negative indices")
    n = int(v.t.max()) + 1 + int(p.rng.integers(0, 3))
    return p.apply(f"one_hot_indices({n})", lambda b: b.one_hot_indices(n),
                   lambda t: torch.nn.functional.one_hot(t, n), "i", v)


@op(INT_OPS, INT_OPS)
def int_arith(p: Program, v: Val) -> Val:
    bounded(v, 1e4)
    name = p.pick(["add", "sub", "mul", "div", "add_scalar", "mul_scalar", "div_scalar", "neg", "abs",
                   "clamp", "powi_scalar(2)"])
    if name in ("add", "sub", "mul", "div"):
        w = p.partner(v, "i")
        bounded(w, 1e4)
        if name == "div":
            # Burn's Int division truncates toward zero (torch's default floors).
            return p.apply(f"div(·, |{w.shape}|+1)", lambda a, b: a.div(b.abs().add_scalar(1)),
                           lambda a, b: torch.div(a, b.abs() + 1, rounding_mode="trunc"), "i", v, w)
        return p.apply(f"{name}(·, {w.shape})", lambda a, b: getattr(a, name)(b),
                       getattr(torch, name), "i", v, w)
    s = int(p.rng.integers(-4, 5)) or 3
    fns = {"add_scalar": (lambda b: b.add_scalar(s), lambda t: t + s),
           "mul_scalar": (lambda b: b.mul_scalar(s), lambda t: t * s),
           "div_scalar": (lambda b: b.div_scalar(s), lambda t: torch.div(t, s, rounding_mode="trunc")),
           "neg": (lambda b: b.neg(), torch.neg),
           "abs": (lambda b: b.abs(), torch.abs),
           "clamp": (lambda b: b.clamp(-abs(s), abs(s)), lambda t: t.clamp(-abs(s), abs(s))),
           "powi_scalar(2)": (lambda b: b.powi_scalar(2), lambda t: t ** 2)}
    return p.apply(f"{name}({s})", *fns[name], "i", v)


@op(INT_OPS)
def int_reduce(p: Program, v: Val) -> Val:
    d = p.dim(v)
    name = p.pick(["sum", "sum_dim", "mean_dim", "max_dim", "min_dim", "max", "min"])
    if name == "sum":
        return p.apply("sum", lambda b: b.sum(), lambda t: t.sum().reshape(1), "i", v)
    if name == "sum_dim":
        return p.apply(f"sum_dim({d})", lambda b: b.sum_dim(d), lambda t: t.sum(d, keepdim=True), "i", v)
    if name == "mean_dim":
        # Burn's Int mean truncates toward zero.
        return p.apply(f"mean_dim({d})", lambda b: b.mean_dim(d),
                       lambda t: torch.div(t.sum(d, keepdim=True), max(t.shape[d], 1), rounding_mode="trunc"),
                       "i", v)
    if name in ("max", "min"):
        fn = torch.amax if name == "max" else torch.amin
        return p.apply(name, lambda b: getattr(b, name)(), lambda t: fn(t).reshape(1), "i", v)
    fn = torch.amax if name == "max_dim" else torch.amin
    return p.apply(f"{name}({d})", lambda b: getattr(b, name)(d), lambda t: fn(t, d, keepdim=True), "i", v)


@op(INT_OPS, BOOL_OPS)
def to_float(p: Program, v: Val) -> Val:
    bounded(v, 1e6)
    return p.apply("float()", lambda b: b.float(), lambda t: t.to(torch.float32), "f", v)


# -- Bool ------------------------------------------------------------------------
@op(BOOL_OPS, BOOL_OPS)
def bool_ops(p: Program, v: Val) -> Val:
    name = p.pick(["bool_not", "~", "bool_and", "bool_or", "&", "|", "int()"])
    if name in ("bool_not", "~"):
        return p.apply(name, lambda b: b.bool_not() if name == "bool_not" else ~b, torch.logical_not, "b", v)
    if name == "int()":
        return p.apply(name, lambda b: b.int(), lambda t: t.to(torch.int64), "i", v)
    w = p.partner(v, "b")
    fb = {"bool_and": lambda a, b: a.bool_and(b), "bool_or": lambda a, b: a.bool_or(b),
          "&": lambda a, b: a & b, "|": lambda a, b: a | b}[name]
    ft = torch.logical_and if name in ("bool_and", "&") else torch.logical_or
    return p.apply(f"{name}(·, {w.shape})", fb, ft, "b", v, w)


@op(INT_OPS, BOOL_OPS)
def to_bool(p: Program, v: Val) -> Val:
    return p.apply("bool()", lambda b: b.bool(), lambda t: t != 0, "b", v)


# -- layout (every kind) -----------------------------------------------------------------
def _factor_shape(p: Program, n: int) -> list:
    rank = int(p.rng.integers(1, 4))
    shape = [1] * rank
    rest = n
    for f in (2, 3, 5, 7):
        while rest % f == 0:
            rest //= f
            shape[int(p.rng.integers(rank))] *= f
    shape[int(p.rng.integers(rank))] *= rest
    return shape


@op(ANY_OPS, ANY_OPS)
def reshape(p: Program, v: Val) -> Val:
    n = v.t.numel()
    if n == 0:
        raise Skip("reshape of nothing")
    shape = _factor_shape(p, n)
    spec = list(shape)
    if p.rng.random() < 0.3:
        spec[int(p.rng.integers(len(spec)))] = -1
    elif p.rng.random() < 0.3 and len(shape) <= v.rank:
        # Burn: 0 keeps the size at that position.
        for i in range(len(shape)):
            if shape[i] == v.shape[i]:
                spec[i] = 0
                break
    return p.apply(f"reshape({spec})", lambda b: b.reshape(spec), lambda t: t.reshape(shape), v.kind, v)


@op(ANY_OPS)
def flatten(p: Program, v: Val) -> Val:
    s = int(p.rng.integers(v.rank))
    e = int(p.rng.integers(s, v.rank))
    return p.apply(f"flatten({s}, {e})", lambda b: b.flatten(s, e), lambda t: t.flatten(s, e), v.kind, v)


@op(ANY_OPS, ANY_OPS)
def move_dims(p: Program, v: Val) -> Val:
    name = p.pick(["swap_dims", "permute", "transpose", "unsqueeze_dim", "squeeze"])
    if name == "swap_dims":
        a, b = p.dim(v), p.dim(v)
        return p.apply(f"swap_dims({a}, {b})", lambda x: x.swap_dims(a, b), lambda t: t.transpose(a, b), v.kind, v)
    if name == "permute":
        axes = [int(a) for a in p.rng.permutation(v.rank)]
        return p.apply(f"permute({axes})", lambda x: x.permute(axes), lambda t: t.permute(axes), v.kind, v)
    if name == "transpose":
        if v.rank < 2:
            raise Skip("rank 1")
        return p.apply("transpose", lambda x: x.T, lambda t: t.transpose(-2, -1), v.kind, v)
    if name == "unsqueeze_dim":
        if v.rank >= 4:
            raise Skip("rank 4")
        d = int(p.rng.integers(-v.rank - 1, v.rank + 1))
        return p.apply(f"unsqueeze_dim({d})", lambda x: x.unsqueeze_dim(d), lambda t: t.unsqueeze(d), v.kind, v)
    ones = [d for d, s in enumerate(v.shape) if s == 1]
    if not ones or v.rank < 2:
        raise Skip("no size-1 dim")
    d = p.pick(ones)
    return p.apply(f"squeeze({d})", lambda x: x.squeeze(d), lambda t: t.squeeze(d), v.kind, v)


@op(ANY_OPS)
def expand_repeat(p: Program, v: Val) -> Val:
    if v.t.numel() > 64:
        raise Skip("big enough")
    if p.rng.random() < 0.5:
        shape = [int(p.rng.integers(1, 4)) if s == 1 else (-1 if p.rng.random() < 0.3 else s) for s in v.shape]
        real = [s if n == -1 else n for s, n in zip(v.shape, shape)]
        return p.apply(f"expand({shape})", lambda b: b.expand(shape), lambda t: t.expand(real), v.kind, v)
    d = p.dim(v)
    times = int(p.pick([0, 1, 2, 3]))
    reps = [times if i == d % v.rank else 1 for i in range(v.rank)]
    return p.apply(f"repeat({d}, {times})", lambda b: b.repeat(d, times), lambda t: t.repeat(*reps), v.kind, v)


def _random_range(p: Program, size: int):
    """A burnbook range for a dim of `size`, and the indices it selects."""
    u = p.rng.random()
    if u < 0.2 and size:
        i = int(p.rng.integers(-size, size))
        return i, [i % size]
    if u < 0.4:
        a = int(p.rng.integers(0, size + 1))
        b = int(p.rng.integers(a, size + 1))
        return (a, b), list(range(a, b))
    def bound():
        return None if p.rng.random() < 0.25 else int(p.rng.integers(-size - 2, size + 3))
    r = slice(bound(), bound(), p.pick([1, 1, 2, 3, -1, -1, -2, None]))
    return r, list(range(size))[r]


def _index_tensors(picks: list) -> tuple:
    """Advanced-index tensors selecting the outer product of `picks` (np.ix_)."""
    return tuple(torch.tensor(a, dtype=torch.long) for a in np.ix_(*[np.asarray(q, dtype=np.int64) for q in picks]))


@op(ANY_OPS, ANY_OPS)
def slicing(p: Program, v: Val) -> Val:
    k = int(p.rng.integers(1, v.rank + 1))
    ranges, picks = zip(*[_random_range(p, s) for s in v.shape[:k]])
    ranges, picks = list(ranges), list(picks) + [list(range(s)) for s in v.shape[k:]]
    shape = [len(q) for q in picks]
    # torch has no negative steps: the same selection by index (differentiable).
    def take(t):
        if 0 in shape:
            return t.reshape(-1)[:0].reshape(shape)
        return t[_index_tensors(picks)]
    if p.rng.random() < 0.3 and v.kind != "b":
        w = p.leaf(shape, v.kind)

        def put(t, u):
            out = t.clone()
            if 0 not in shape:
                out[_index_tensors(picks)] = u
            return out

        if p.rng.random() < 0.5:
            return p.apply(f"slice_assign({ranges})", lambda b, x: b.slice_assign(ranges, x), put, v.kind, v, w)

        def setitem(b, x):
            out = b.clone()  # __setitem__ rebinds `out` only; `b` keeps its value
            out[tuple(ranges)] = x
            return out

        return p.apply(f"setitem{tuple(ranges)}", setitem, put, v.kind, v, w)
    if p.rng.random() < 0.5:
        return p.apply(f"getitem{tuple(ranges)}", lambda b: b[tuple(ranges)], take, v.kind, v)
    return p.apply(f"slice({ranges})", lambda b: b.slice(ranges), take, v.kind, v)


@op(ANY_OPS)
def narrow_chunk(p: Program, v: Val) -> Val:
    d = p.dim(v)
    size = v.shape[d]
    if p.rng.random() < 0.5:
        start = int(p.rng.integers(0, size + 1))
        length = int(p.rng.integers(0, size - start + 1))
        return p.apply(f"narrow({d}, {start}, {length})", lambda b: b.narrow(d, start, length),
                       lambda t: t.narrow(d, start, length), v.kind, v)
    n = int(p.rng.integers(1, 4))
    chunks = len(torch.chunk(v.t, n, d))
    i = int(p.rng.integers(chunks))
    return p.apply(f"chunk({n}, {d})[{i}]", lambda b: b.chunk(n, d)[i], lambda t: torch.chunk(t, n, d)[i], v.kind, v)


@op(ANY_OPS)
def cat_stack(p: Program, v: Val) -> Val:
    d = p.dim(v)
    if p.rng.random() < 0.6:
        shape = list(v.shape)
        shape[d] = int(p.rng.integers(0, 3))
        w = v if p.rng.random() < 0.3 else p.leaf(shape, v.kind)
        cls = type(v.b)
        return p.apply(f"cat([·, {w.shape}], {d})", lambda a, b: cls.cat([a, b], d),
                       lambda a, b: torch.cat([a, b], d), v.kind, v, w)
    if v.rank >= 4:
        raise Skip("rank 4")
    w = v if p.rng.random() < 0.3 else p.leaf(list(v.shape), v.kind)
    d = int(p.rng.integers(0, v.rank + 1))
    cls = type(v.b)
    return p.apply(f"stack([·, {w.shape}], {d})", lambda a, b: cls.stack([a, b], d),
                   lambda a, b: torch.stack([a, b], d), v.kind, v, w)


# -- indexing ------------------------------------------------------------------------
def _int_leaf(p: Program, shape: list, hi: int) -> Val:
    arr = p.rng.integers(0, hi, size=shape).astype(np.int64)
    p.trace.append(f"index {shape} = {arr.tolist() if arr.size <= 64 else f'<{arr.size} values, seeded>'}")
    return Val(Tensor[p.B, len(shape), Int].from_data(arr), torch.tensor(arr), "i")


@op(FLOAT_OPS, INT_OPS)
def gather_scatter(p: Program, v: Val) -> Val:
    d = p.dim(v)
    dd = d % v.rank
    size = v.shape[dd]
    if size == 0 or 0 in v.shape:
        raise Skip("empty")
    shape = [int(p.rng.integers(1, 5)) if i == dd else int(p.rng.integers(1, s + 1)) for i, s in enumerate(v.shape)]
    idx = _int_leaf(p, shape, size)
    if p.rng.random() < 0.5:
        return p.apply(f"gather({d}, {shape})", lambda b, i: b.gather(d, i), lambda t, i: t.gather(d, i), v.kind, v, idx)
    w = p.leaf(shape, v.kind)
    # Burn's scatter adds (torch.scatter_add).
    return p.apply(f"scatter({d}, {shape})", lambda b, i, x: b.scatter(d, i, x),
                   lambda t, i, x: t.scatter_add(d, i, x), v.kind, v, idx, w)


@op(FLOAT_OPS, INT_OPS)
def select(p: Program, v: Val) -> Val:
    d = p.dim(v)
    size = v.shape[d]
    if size == 0:
        raise Skip("empty")
    n = int(p.rng.integers(1, 5))
    idx = _int_leaf(p, [n], size)
    if p.rng.random() < 0.5:
        return p.apply(f"select({d}, {n})", lambda b, i: b.select(d, i), lambda t, i: t.index_select(d, i),
                       v.kind, v, idx)
    shape = list(v.shape)
    shape[d] = n
    w = p.leaf(shape, v.kind)
    # Burn's select_assign adds (torch.index_add).
    return p.apply(f"select_assign({d}, {n})", lambda b, i, x: b.select_assign(d, i, x),
                   lambda t, i, x: t.index_add(d, i, x), v.kind, v, idx, w)


FAMILIES = {"f": FLOAT_OPS + ANY_OPS, "i": INT_OPS + ANY_OPS, "b": BOOL_OPS + ANY_OPS}


# -- running ---------------------------------------------------------------------
def play(p: Program, steps: int = 8, side: int = 3) -> Program:
    """Run a random program of `steps` ops in `p`; raises Mismatch on the
    first disagreement (p.trace then shows the program up to it)."""
    rng = p.rng
    rank = int(rng.integers(1, 4))
    kind = "f" if rng.random() < 0.6 else ("i" if rng.random() < 0.6 else "b")
    cur = p.leaf([int(rng.integers(1, side + 1)) for _ in range(rank)], kind)
    cap = min(512 * max(1, side // 3) ** 3, 200_000)
    p.values.append(cur)
    done = tries = 0
    while done < steps and tries < steps * 8:
        tries += 1
        if rng.random() < 0.2:
            cur = p.pick(p.values)
        if cur.t.numel() > cap:
            cur = p.pick([v for v in p.values if v.t.numel() <= cap] or [p.values[0]])
        fn = p.pick(FAMILIES[cur.kind])
        try:
            cur = fn(p, cur)
        except Skip:
            p.trace.append("  (skipped)")
            continue
        done += 1
    p.trace.append("every value again (no op may change an earlier one)")
    for v in p.values:
        check(v, "re-check")
    if p.grad:
        check_grads(p)
    return p


def check_grads(p: Program) -> None:
    """d/dleaf of sum_k sum(value_k * W_k) over every Float value, both sides."""
    outs = [v for v in p.values if v.kind == "f" and v.t.requires_grad and v.t.numel()]
    if not outs:
        return
    loss_b = loss_t = None
    for v in outs:
        w = p.rng.uniform(-1, 1, size=v.shape).astype(np.float32)
        scale = 1.0 / max(1.0, float(v.t.detach().abs().max()))
        wb = Tensor[p.B, v.rank].from_data(w * np.float32(scale)).detach()
        term_b = v.b.mul(wb).sum()
        term_t = (v.t * torch.tensor(w * np.float32(scale))).sum().reshape(1)
        loss_b = term_b if loss_b is None else loss_b.add(term_b)
        loss_t = term_t if loss_t is None else loss_t + term_t
    p.trace.append("backward")
    grads = loss_b.backward()
    loss_t.backward()
    for i, leaf in enumerate(p.leaves):
        want = leaf.t.grad
        got = leaf.b.grad(grads)
        if want is None:
            want_np = np.zeros(leaf.shape, np.float32)
        else:
            want_np = want.numpy()
        got_np = np.zeros(leaf.shape, np.float32) if got is None else got.to_numpy()
        if got is not None and got.dims() != leaf.shape:
            raise Mismatch(f"grad of leaf {i}: shape {got.dims()}, expected {leaf.shape}")
        if not close(got_np, want_np, 2e-3, 2e-4):
            raise Mismatch(f"grad of leaf {i} {leaf.shape}:\n  burnbook {got_np.tolist()}\n  torch    {want_np.tolist()}")


def run(backend: Any, seed: int, programs: int, steps: int = 8, side: int = 3) -> list[str]:
    """Run `programs` programs from `seed`; a report per failing program."""
    failures = []
    for k in range(programs):
        p = Program(backend, np.random.default_rng([seed, k]))
        try:
            play(p, steps, side)
        except Exception as err:  # noqa: BLE001 - a crash is a failure too, with its trace
            tb = "" if isinstance(err, Mismatch) else traceback.format_exc(limit=-4)
            lines = "\n    ".join(p.trace[-25:])
            failures.append(f"[{backend.name()} seed={seed} program={k}] {type(err).__name__}: {err}\n"
                            f"    {lines}\n{tb}")
    return failures


def _backends(names: list[str]) -> dict:
    from burnbook.autodiff import Autodiff
    from burnbook.backend import NdArray
    from burnbook.backend.taichi import Taichi

    every = {"ndarray": NdArray, "taichi": Taichi, "autodiff-ndarray": Autodiff[NdArray],
             "autodiff-taichi": Autodiff[Taichi]}
    return {n: every[n] for n in names}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--programs", type=int, default=400)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--backends", default="ndarray,taichi,autodiff-ndarray,autodiff-taichi")
    ap.add_argument("--show", type=int, default=3, help="failing programs to print per backend")
    ap.add_argument("--side", type=int, default=3,
                    help="largest dim of a program's first tensor (40 reaches Taichi's parallel kernels)")
    args = ap.parse_args()
    for name, backend in _backends(args.backends.split(",")).items():
        start, fails = time.perf_counter(), []
        for seed in range(args.seeds):
            fails += run(backend, seed, args.programs, args.steps, args.side)
        total = args.seeds * args.programs
        print(f"{name}: {total - len(fails)}/{total} programs agree "
              f"({100.0 * (total - len(fails)) / total:.2f} %), {time.perf_counter() - start:.1f} s")
        for f in fails[:args.show]:
            print("  " + f)


if __name__ == "__main__":
    main()
