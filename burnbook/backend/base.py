"""The Backend protocol: the primitive operations every backend implements.

This mirrors Burn's `Backend` trait. A backend is a class whose class methods
work on its own *primitive* (a NumPy array for `NdArray`, a Taichi buffer for
`Taichi`, an inner primitive plus a graph node for `Autodiff[B]`). Users never
call these methods; `Tensor` does, after it has checked ranks, kinds and
normalised every argument. So a backend may assume:

- dims are non-negative ints smaller than the rank;
- `shape` arguments are tuples of non-negative ints;
- `ranges` are tuples of Python `slice` objects with int start/stop/step
  already resolved against the shape (`slice.indices`), one per leading dim;
  stop is None (never -1) when a negative step runs past index 0, so each
  slice indexes a NumPy array as it is;
- binary tensor ops get operands of the same rank; sizes broadcast where one
  side is 1 (the backend raises `ValueError` when they do not);
- reductions keep the rank (`sum_dim` leaves size 1 at `dim`); full
  reductions (`float_sum`, `float_max`...) return shape `(1,)`;
- indices are Int primitives and masks Bool primitives of the same backend;
- scalars are Python `float`/`int`/`bool`.

Ops are named by kind as in Burn (`float_add`, `int_add`, `bool_not`), so a
decorator such as `Autodiff` can intercept the Float ops and pass the others
through untouched. Composite operations (softmax, var, repeat, triu...) live
in the tensor layer, built from these primitives.

`float_*` ops keep the input's float dtype (f32 by default, f16/f64 after a
`float_cast`). Int primitives default to int64, Bool to bool.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, ClassVar, Sequence

import numpy as np

from .module_ops import ModuleOps
from .protocol import BoolOps, FloatOps, IntOps, is_stub

Shape = tuple
Ranges = tuple

# Every primitive op of the protocol, by kind.  The conformance suite and the
# Autodiff decorator read this table; a backend is complete when it defines all
# of them. `protocol/` writes each one out as a stub, in the same order.
FLOAT_OPS: tuple[str, ...] = (
    # data and creation
    "float_from_data", "float_into_data", "float_empty", "float_full",
    "float_random", "float_shape", "float_device", "float_to_device",
    "float_dtype", "float_cast",
    # layout
    "float_reshape", "float_swap_dims", "float_permute", "float_expand",
    "float_slice", "float_slice_assign", "float_cat",
    # indexing
    "float_gather", "float_scatter", "float_select", "float_select_assign",
    "float_mask_where", "float_mask_fill",
    # arithmetic
    "float_add", "float_sub", "float_mul", "float_div", "float_powf",
    "float_add_scalar", "float_sub_scalar", "float_mul_scalar",
    "float_div_scalar", "float_powf_scalar", "float_neg", "float_abs",
    "float_clamp",
    # unary math
    "float_exp", "float_log", "float_log1p", "float_erf", "float_sqrt",
    "float_recip", "float_cos", "float_sin", "float_tanh", "float_relu", "float_sigmoid",
    # comparison (return Bool primitives)
    "float_equal", "float_greater", "float_greater_equal", "float_lower",
    "float_lower_equal", "float_equal_elem", "float_greater_elem",
    "float_greater_equal_elem", "float_lower_elem", "float_lower_equal_elem",
    # reductions
    "float_sum", "float_sum_dim", "float_mean_dim", "float_max", "float_min",
    "float_max_dim", "float_min_dim", "float_argmax", "float_argmin",
    # linear algebra and conversion
    "float_matmul", "float_into_int",
)

INT_OPS: tuple[str, ...] = (
    "int_from_data", "int_into_data", "int_empty", "int_full", "int_shape",
    "int_device", "int_to_device", "int_dtype",
    "int_reshape", "int_swap_dims", "int_permute", "int_expand", "int_slice",
    "int_slice_assign", "int_cat",
    "int_gather", "int_scatter", "int_select", "int_select_assign",
    "int_mask_where", "int_mask_fill",
    "int_add", "int_sub", "int_mul", "int_div", "int_add_scalar",
    "int_sub_scalar", "int_mul_scalar", "int_div_scalar", "int_neg", "int_abs",
    "int_clamp",
    "int_equal", "int_greater", "int_greater_equal", "int_lower",
    "int_lower_equal", "int_equal_elem", "int_greater_elem",
    "int_greater_equal_elem", "int_lower_elem", "int_lower_equal_elem",
    "int_sum", "int_sum_dim", "int_max", "int_min", "int_max_dim",
    "int_min_dim", "int_argmax", "int_argmin",
    "int_into_float", "int_arange",
)

BOOL_OPS: tuple[str, ...] = (
    "bool_from_data", "bool_into_data", "bool_empty", "bool_shape",
    "bool_device", "bool_to_device", "bool_reshape", "bool_swap_dims",
    "bool_permute", "bool_expand", "bool_slice", "bool_slice_assign",
    "bool_cat", "bool_select", "bool_mask_where", "bool_equal", "bool_not",
    "bool_and", "bool_or", "bool_into_int", "bool_into_float",
)

# Module operations (Burn's `ModuleOps`): every one has a default written with
# the primitive ops above (`module_ops.ModuleOps`, a base of `Backend`), so a
# backend gets them for free and overrides the ones it can do faster.
# Signatures: see `ModuleOps`; the `*_backward` ops are the helpers the
# autodiff rules call.
MODULE_OPS: tuple[str, ...] = (
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "conv2d_weight_backward",
    "avg_pool1d", "avg_pool2d", "avg_pool2d_backward",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward",
    "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
    "embedding", "embedding_backward", "attention", "layer_norm", "gelu",
)

ALL_OPS: tuple[str, ...] = FLOAT_OPS + INT_OPS + BOOL_OPS + MODULE_OPS

# The extra ops of an autodiff backend (Burn's `AutodiffBackend`), on Float
# primitives only; Int and Bool primitives of `Autodiff[B]` are B's own.
AUTODIFF_OPS: tuple[str, ...] = (
    "float_require_grad",      # (p) -> p, now tracked as a leaf
    "float_set_require_grad",  # (p, flag: bool) -> p
    "float_is_require_grad",   # (p) -> bool
    "float_detach",            # (p) -> p with no graph
    "float_backward",          # (p) -> Gradients (ones seed, any shape)
    "float_grad",              # (p, grads) -> inner primitive or None
    "float_grad_remove",       # (p, grads) -> inner primitive or None (popped)
    "float_grad_replace",      # (p, grads, inner_p) -> None
    "float_inner",             # (p) -> inner primitive
    "float_from_inner",        # (inner_p) -> untracked p
)


# Layout and indexing ops move elements without looking at them, so a
# backend's Float version serves every kind; `share_layout_ops` fills the
# Int and Bool names from it unless the backend wrote its own.
LAYOUT_OPS: dict[str, tuple[str, ...]] = {
    "int": ("into_data", "shape", "device", "to_device", "dtype", "reshape", "swap_dims",
            "permute", "expand", "slice", "slice_assign", "cat", "gather", "scatter", "select",
            "select_assign", "mask_where", "mask_fill"),
    "bool": ("into_data", "shape", "device", "to_device", "reshape", "swap_dims", "permute",
             "expand", "slice", "slice_assign", "cat", "select", "mask_where"),
}


def share_layout_ops(cls: type) -> type:
    """Class decorator: `int_reshape = float_reshape` and so on for every op
    of `LAYOUT_OPS` that the backend class (or an ops class it inherits, before
    `Backend`) does not define itself. A Float op the backend lacks (only the
    protocol's stub) is an AttributeError naming it."""
    own = [k for k in cls.__mro__ if not (isinstance(k, type) and issubclass(Backend, k))]
    for kind, names in LAYOUT_OPS.items():
        for name in names:
            if not any(f"{kind}_{name}" in k.__dict__ for k in own):
                source = inspect.getattr_static(cls, f"float_{name}")
                if is_stub(source):
                    raise AttributeError(f"float_{name}")
                setattr(cls, f"{kind}_{name}", source)
    return cls


class Backend(ModuleOps, FloatOps, IntOps, BoolOps):
    """Base class of every backend; subclasses implement the ops of `ALL_OPS`
    (the module ops of `MODULE_OPS` have defaults, inherited from `ModuleOps`).
    Each op is written out, with its signature and a docstring, as a stub of
    `protocol/` (`FloatOps`, `IntOps`, `BoolOps`), which an editor's
    go-to-definition on `B.float_exp` lands on; a stub counts as missing.

    Class attributes a backend sets:

    - `Device`: the device class (`Cpu`, `TaichiDevice`).
    - `InnerBackend`: the backend itself, except for decorators such as
      `Autodiff[B]`, where it is `B`.
    - `is_autodiff`: whether `backward()` is available.

    Signatures (P is the backend's primitive; `{k}` is float/int/bool):

    - `{k}_from_data(array: np.ndarray, device) -> P` (array has the kind's dtype)
    - `{k}_into_data(p) -> np.ndarray` (a host copy the caller may keep)
    - `{k}_empty(shape, device)`; `float_full(shape, value, device, dtype)`;
      `int_full(shape, value, device)`
    - `float_random(shape, distribution, device)`: host RNG seeded by `seed`
    - `{k}_shape(p) -> tuple`, `{k}_device(p)`, `{k}_to_device(p, device)`,
      `{k}_dtype(p) -> np.dtype`, `float_cast(p, dtype)`
    - `{k}_reshape(p, shape)`, `{k}_swap_dims(p, d1, d2)`,
      `{k}_permute(p, axes)`, `{k}_expand(p, shape)` (broadcast size-1 dims),
      `{k}_slice(p, ranges)`, `{k}_slice_assign(p, ranges, values)` (returns a
      new primitive; the input is not modified), `{k}_cat(ps, dim)`
    - `{k}_gather(dim, p, indices)`, `{k}_scatter(dim, p, indices, values)`
      (adds), `{k}_select(p, dim, indices)` (indices 1-D),
      `{k}_select_assign(p, dim, indices, values)` (adds),
      `{k}_mask_where(p, mask, values)` (values where mask, else p),
      `{k}_mask_fill(p, mask, value)`
    - binary ops `(lhs, rhs)`, scalar ops `(p, scalar)`, unary ops `(p)`;
      `float_clamp(p, min, max)` with either bound possibly None
    - comparisons `(lhs, rhs)` and `_elem` `(p, scalar)` return Bool
    - `float_sum(p)`, `float_max(p)`, `float_min(p)` -> shape (1,);
      `float_sum_dim(p, dim)`, `float_mean_dim`, `float_max_dim`,
      `float_min_dim`, `float_argmax(p, dim)`, `float_argmin(p, dim)` (Int)
    - `float_matmul(lhs, rhs)`: `[..., m, k] @ [..., k, n]`, batch dims
      broadcast
    - `float_into_int` (truncates toward zero), `int_into_float`,
      `bool_into_int`, `bool_into_float`
    - `int_arange(start, end, step, device)`
    - `int_div` truncates toward zero, as Burn does.
    """

    Device: ClassVar[type]
    InnerBackend: ClassVar[type]
    is_autodiff: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "InnerBackend" not in cls.__dict__:
            cls.InnerBackend = cls  # a plain backend is its own inner backend

    @classmethod
    def name(cls) -> str:
        """The backend's name as Burn prints it (`"ndarray"`)."""
        raise NotImplementedError

    @classmethod
    def default_device(cls) -> Any:
        raise NotImplementedError

    @classmethod
    def seed(cls, seed: int) -> None:
        """Make every later random op of this backend reproducible."""
        raise NotImplementedError

    @classmethod
    def rng_state(cls) -> str:
        """A snapshot of the backend's random generator, as text (a checkpoint
        stores it so a resumed run draws the same dropout masks). Backends
        that draw on the host keep a NumPy `Generator` in `_rng`."""
        rng = getattr(cls.InnerBackend, "_rng", None)
        if rng is None:
            raise NotImplementedError(f"{cls.__name__} keeps no host random generator to snapshot")
        return json.dumps(rng.bit_generator.state, sort_keys=True)

    @classmethod
    def set_rng_state(cls, state: str) -> None:
        """Restore a snapshot taken by `rng_state()`."""
        inner = cls.InnerBackend
        if getattr(inner, "_rng", None) is None:
            raise NotImplementedError(f"{cls.__name__} keeps no host random generator to restore")
        try:
            fields = json.loads(state)
            kind = getattr(np.random, fields["bit_generator"])
            generator = np.random.Generator(kind())
            generator.bit_generator.state = fields
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise ValueError(f"{cls.__name__}.set_rng_state: not a generator snapshot ({err})") from err
        inner._rng = generator

    @classmethod
    def sync(cls, device: Any = None) -> None:
        """Wait until every queued operation on `device` has finished."""

    @classmethod
    def primitive_layout(cls, p: Any) -> tuple:
        """How the primitive `p` (of any kind) lies in memory:
        `(shape, strides, offset, storage)`, strides and offset in elements,
        `storage` the element count of the flat buffer it views. Each backend
        reads its own primitive; `burnbook.tensor.layout_of` calls this. A
        backend that keeps no strided storage raises NotImplementedError."""
        raise NotImplementedError(f"{cls.__name__} does not say how its primitives lie in memory "
                                  "(define primitive_layout on the backend class)")

    @classmethod
    def missing_ops(cls) -> list[str]:
        """The ops of the protocol this backend does not define (for tests):
        absent, or only the protocol's stub."""
        return [op for op in ALL_OPS if not callable(fn := getattr(cls, op, None)) or is_stub(fn)]


def broadcast_shape(op: str, lhs: Sequence[int], rhs: Sequence[int]) -> tuple:
    """The shape two same-rank operands broadcast to, or a ValueError naming both."""
    out = []
    for a, b in zip(lhs, rhs):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise ValueError(
                f"{op}: shapes {list(lhs)} and {list(rhs)} do not broadcast "
                f"(sizes {a} and {b} differ and neither is 1)"
            )
    if len(lhs) != len(rhs):
        raise ValueError(
            f"{op}: ranks differ ({len(lhs)} for {list(lhs)}, {len(rhs)} for {list(rhs)})"
        )
    return tuple(out)


def check_devices(op: str, a: Any, b: Any) -> None:
    """Raise a ValueError when two operands live on different devices."""
    if a != b:
        raise ValueError(f"{op}: tensors are on different devices ({a} and {b})")


def np_dtype_name(dtype: np.dtype) -> str:
    """Burn's short name of a NumPy dtype: f32, f64, f16, i64, i32, u8, bool."""
    return _DTYPE_NAMES.get(np.dtype(dtype), str(dtype))


_DTYPE_NAMES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.int16): "i16",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "u8",
    np.dtype(np.bool_): "bool",
}
