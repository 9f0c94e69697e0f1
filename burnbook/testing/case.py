"""One conformance case: an op of the Backend protocol, seeded inputs, the op
run on a backend, and a NumPy reference to compare with.

A `Case` is data, not a test function, so the same case serves
`check_backend(B)` in a notebook and a pytest item in `tests/backend/`
(Burn's backend-tests crate plays that part for Burn; PyTorch's OpInfo
records and tinygrad's `helper_test_op` are the same idea).

How a case runs (`runner.run_case`):

1. `inputs(rng)` gives NumPy arrays; each becomes a primitive of B by its
   dtype: float32/float64 through `float_from_data`, int64 through
   `int_from_data`, bool through `bool_from_data`.
2. `run(B, device, *primitives)` calls the op (the backend method `op`,
   directly on primitives: no Tensor layer in between, so a failure points at
   one backend method) and returns a primitive, a tuple of primitives, or a
   plain value (a shape, a dtype).
3. `reference(*arrays)` computes the same on the arrays (floats widened to
   float64, so NumPy is the more exact side). A NumPy array says what kind
   the output must be (float -> `float_into_data`, int64 -> `int_into_data`,
   bool -> `bool_into_data`); any other value is compared with `==`.
4. Shapes and element types must match exactly (float32 for a float output
   unless `out_dtype` says otherwise, int64, bool); floats within
   `atol + rtol * |expected|` (NaN equal to NaN), ints and bools exactly.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class Case:
    """One conformance case of `family` for the protocol op `op`.

    `name` is unique among all cases (`"float_exp[3x4]"`): it names the
    pytest item and the report's failure. `uses` lists the other protocol ops
    the case calls besides `op` and the `*_from_data`/`*_into_data` that
    move its inputs and outputs (those are added automatically)."""

    name: str
    family: str
    op: str
    inputs: Callable[[np.random.Generator], tuple]
    run: Callable[..., Any]
    reference: Callable[..., Any]
    uses: tuple[str, ...] = ()
    rtol: float = 1e-5
    atol: float = 1e-6
    out_dtype: Any = np.float32   # the element type a float output must have
    note: str = ""                # what the case checks beyond the op's plain meaning (shown on failure)

    @property
    def seed(self) -> int:
        """A seed of its own, stable across runs and Python processes."""
        return zlib.crc32(self.name.encode())

    def arrays(self) -> tuple:
        """The case's inputs, drawn from its own seeded generator."""
        return tuple(np.asarray(a) for a in self.inputs(np.random.default_rng(self.seed)))


@dataclass(frozen=True)
class GradCase:
    """One differentiable-op case for `check_autodiff`: `fn(B, *xs)` maps
    Float primitives of an autodiff backend to one Float primitive using the
    op `op` (and the ops in `uses`); `inputs(rng)` gives float64 arrays,
    drawn away from kinks and ties so central differences are exact enough."""

    name: str
    family: str
    op: str
    inputs: Callable[[np.random.Generator], tuple]
    fn: Callable[..., Any]
    uses: tuple[str, ...] = ()

    @property
    def seed(self) -> int:
        return zlib.crc32(self.name.encode())

    def arrays(self) -> tuple:
        return tuple(np.asarray(a, dtype=np.float64)
                     for a in self.inputs(np.random.default_rng(self.seed)))


# -- input helpers shared by the case families -------------------------------------------

def shape_id(*shapes: tuple) -> str:
    """`"3x4"`, or `"3x4,1x4"` for several inputs (a shape `()` is `"scalar"`)."""
    return ",".join("x".join(str(s) for s in shape) or "scalar" for shape in shapes)


def uniform(rng: np.random.Generator, shape: tuple, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    """float32 values in [lo, hi)."""
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def away_from_zero(rng: np.random.Generator, shape: tuple, lo: float = 0.5, hi: float = 2.0) -> np.ndarray:
    """float32 values with |x| in [lo, hi) and random sign (divisors, kinks)."""
    return (rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)).astype(np.float32)


def distinct(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """float32 values with no ties (argmax, max_dim have one answer)."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) / 4).astype(np.float32).reshape(shape)


def ints(rng: np.random.Generator, shape: tuple, lo: int = -9, hi: int = 10) -> np.ndarray:
    """int64 values in [lo, hi)."""
    return rng.integers(lo, hi, size=shape).astype(np.int64)


def bools(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.random(shape) < 0.5


def fixed(*arrays: Any) -> Callable[[np.random.Generator], tuple]:
    """An `inputs` that ignores the generator (hand-picked edge values)."""
    return lambda rng: tuple(np.asarray(a) for a in arrays)
