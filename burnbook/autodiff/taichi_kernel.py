"""Custom ops written as Taichi kernels, with the backward derived by Taichi.

`taichi_op(kernel, output_shape, ...)` turns a `@ti.kernel` into a burnbook
op (a `CustomOp`). On `Taichi` the kernel is the forward; on
`Autodiff[Taichi]` the op records a backward node that runs the kernel's
adjoint, `kernel.grad`, which Taichi's compiler derives from the kernel's
source. So a fused kernel is trainable without a hand-written backward.

    import taichi as ti

    @ti.kernel                    # in a .py file: Taichi reads kernel source
    def scaled_square(x: ti.types.ndarray(ndim=1), out: ti.types.ndarray(ndim=1),
                      dtype: ti.template()):
        for i in x:
            out[i] = 3 * x[i] * x[i]

    op = taichi_op(scaled_square, output_shape=lambda x: x,
                   reference=lambda x: x * x * 3.0)
    y = op.apply(x)               # Tensors in, Tensor out

The kernel's calling convention
-------------------------------
`kernel(input_1, ..., input_n, output, *params)`: the leading parameters
annotated `ti.types.ndarray(...)` are the inputs and, last of them, the
output; burnbook passes each input as a contiguous n-d `ti.ndarray` copy of
the tensor (same shape and dtype) and the output as a zero-filled n-d
`ti.ndarray` of shape `output_shape(*input_shapes, **params)`. The remaining
parameters are keyword arguments of the call (`op.apply(x, alpha=0.1)`),
except `dtype` (annotate it `ti.template()`), which burnbook fills with the
output's Taichi element type so one kernel serves f32 and f64. Inputs of
mixed float dtypes are cast to their common dtype first.

What runs where
---------------
- `Taichi`: the kernel. `Autodiff[Taichi]`: the kernel, plus Burn's
  tracked/untracked split: when no input is tracked nothing is kept and the
  inputs are plain ndarrays; when one is, the inputs listed in
  `differentiable` (default: all) and the output are allocated with
  `needs_grad=True` and kept as the node's state. Its backward seeds
  `output.grad` with the incoming gradient, zeroes the inputs' `.grad`, calls
  `kernel.grad(...)` with the same arguments and registers each tracked
  input's `.grad` as its gradient (a Taichi primitive). Inputs not listed in
  `differentiable` are constants: they get no gradient.
- Any other backend (`NdArray`, `Autodiff[NdArray]`, a user's backend): the
  `reference` composition, a function of `Tensor`s (and the params) built
  from ordinary tensor ops; on an autodiff backend its gradients come from
  those ops. Without `reference` the op raises NotImplementedError there.
  A forward registered with `@op.forward(SomeBackend)` takes precedence on
  plain `SomeBackend`.
- Second derivatives are not available (`kernel.grad` has no graph).

Rules for a kernel whose `kernel.grad` is right
-----------------------------------------------
Taichi's reverse mode assumes these and checks only the last; breaking one
of the others gives wrong gradients *without an error or a warning*. Verify
every kernel with `check_grad(..., reference=...)`, which compares the op's
forward and gradients with the composition's and with finite differences.

1. A plain store (`out[i] = ...`) to an output element may only be its
   first write; every later write to it must accumulate (`out[i] += ...`).
2. Never read an output element before its last write: no
   `out[i] = f(out[i])`, no "accumulate into out, then post-process out".
   Keep running values in local variables and store once (a loop-carried
   local such as `acc += a * b` in an inner `for` is fine in Taichi 1.7:
   reverse mode replays its history from Taichi's autodiff stack).
3. Never write to an input: the adjoint reads the inputs as they are when
   `kernel.grad` runs (a kernel that zeroes its input after use gets zero
   gradients, silently).
4. The top level of the kernel body holds only `for` loops; put per-element
   statements inside them. (This one Taichi does check: compiling
   `kernel.grad` raises "Mixed usage of for-loops and statements without
   looping", at the first backward.)

`burnbook.kernels.examples.fused_matmul_add_relu` has a kernel that follows
the rules and one that breaks rule 2: its forward is right and its
gradients are silently wrong (the adjoint recomputes the relu mask from the
overwritten output), which `check_grad` reports.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Sequence

import numpy as np

from .extension import Backward, CustomOp, Tracked, Untracked

_TI_DTYPES: dict = {}


def _ti_dtype(dtype: np.dtype) -> Any:
    if not _TI_DTYPES:
        import taichi as ti

        _TI_DTYPES.update({np.dtype(np.float32): ti.f32, np.dtype(np.float64): ti.f64,
                           np.dtype(np.float16): ti.f16})
    try:
        return _TI_DTYPES[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"taichi_op: tensors of dtype {dtype} are not supported (f16, f32, f64)") from None


def _taichi_backend() -> type | None:
    try:
        from burnbook.backend.taichi import Taichi
    except ImportError:  # pragma: no cover - the backend ships with burnbook
        return None
    return Taichi


def _is_taichi(backend: type) -> bool:
    T = _taichi_backend()
    return T is not None and isinstance(backend, type) and issubclass(backend, T)


class _KernelState:
    """What the tracked path keeps for the backward: the kernel's arguments
    (`inputs`, `output`: the needs_grad ndarrays; `params`), the element
    type, and the input shapes. `output` is None when the output has no
    element (the kernel did not run; every gradient is zero)."""

    __slots__ = ("inputs", "output", "params", "dtype", "shapes")

    def __init__(self, inputs: list, output: Any, params: tuple, dtype: np.dtype, shapes: list) -> None:
        self.inputs, self.output, self.params = inputs, output, params
        self.dtype, self.shapes = dtype, shapes


class TaichiKernelBackward(Backward):
    """The backward node of a `TaichiKernelOp`: runs `kernel.grad`."""

    def __init__(self, op: "TaichiKernelOp") -> None:
        self.kernel_op = op
        self.op = op.name

    def backward(self, ops, grads) -> None:
        from burnbook.kernels import custom

        B = ops.backend
        st: _KernelState = ops.state
        grad = grads.consume(ops.node)
        device = B.float_device(grad)
        if st.output is None:  # zero-size output: every gradient is zero
            for node, shape in zip(ops.parents, st.shapes):
                if node is not None:
                    grads.register(node, B.float_full(shape, 0.0, device, st.dtype))
            return
        g = _contiguous(B, grad, tuple(st.output.shape), st.dtype)
        custom.flat_to_nd(g.buf, g.offset, st.output.grad)
        for x in st.inputs:
            if x.grad is not None:
                x.grad.fill(0)
        self.kernel_op.kernel.grad(*st.inputs, st.output, *st.params)
        for node, x in zip(ops.parents, st.inputs):
            if node is not None and x.grad is not None:
                grads.register(node, _from_nd(B, x.grad, device, g.dtype))

    def __repr__(self) -> str:
        return f"TaichiKernelBackward({self.op!r})"


def _contiguous(T: type, p: Any, shape: tuple, dtype: np.dtype) -> Any:
    """A contiguous Taichi primitive of `shape` and `dtype` with p's values."""
    if tuple(T.float_shape(p)) != tuple(shape):
        p = T.float_expand(p, shape)
    if np.dtype(T.float_dtype(p)) != dtype:
        p = T.float_cast(p, dtype)
    return T.float_reshape(p, tuple(shape))  # a no-op unless p is a strided view


def _to_nd(T: type, p: Any, dtype: np.dtype, needs_grad: bool) -> Any:
    """A fresh n-d `ti.ndarray` holding a contiguous copy of primitive `p`."""
    import taichi as ti
    from burnbook.kernels import custom

    shape = tuple(T.float_shape(p))
    nd = ti.ndarray(_ti_dtype(dtype), shape, needs_grad=needs_grad)
    if math.prod(shape):
        q = _contiguous(T, p, shape, dtype)
        custom.flat_to_nd(q.buf, q.offset, nd)
    return nd


def _from_nd(T: type, nd: Any, device: Any, dtype: np.dtype) -> Any:
    """A Taichi primitive holding a copy of the n-d ndarray `nd`."""
    from burnbook.kernels import custom

    out = T.float_empty(tuple(nd.shape), device, dtype)
    if out.buf is not None:
        custom.nd_to_flat(nd, out.buf, out.offset)
    return out


def _kernel_params(kernel: Any) -> tuple:
    """(input names, output name, trailing param names) from the kernel's signature."""
    from taichi.types import ndarray_type

    try:
        sig = inspect.signature(kernel)
    except (TypeError, ValueError):
        raise TypeError(f"taichi_op: cannot read the signature of {kernel!r}; pass a @ti.kernel") from None
    arrays, rest = [], []
    for name, prm in sig.parameters.items():
        is_array = isinstance(prm.annotation, ndarray_type.NdarrayType)
        if is_array and rest:
            raise TypeError(f"taichi_op: parameter {name!r} of {kernel.__name__} is an ndarray after a "
                            "non-array parameter; put inputs first, then the output, then the params")
        (arrays if is_array else rest).append(name)
    if len(arrays) < 2:
        raise TypeError(f"taichi_op: {getattr(kernel, '__name__', kernel)} needs at least one input and "
                        "one output parameter annotated ti.types.ndarray(...)")
    return tuple(arrays[:-1]), arrays[-1], tuple(rest)


class TaichiKernelOp(CustomOp):
    """A custom op whose forward is a `@ti.kernel` and whose backward is
    Taichi's `kernel.grad` (see the module docstring for the convention and
    the rules). Build it with `taichi_op`.

    `op(B, *primitives, **params)` runs on backend `B`; `op.apply(*tensors,
    **params)` on `Tensor`s, returning a `Tensor` of the output's rank.
    """

    def __init__(self, kernel: Any, output_shape: Callable, *, name: str | None = None,
                 differentiable: Sequence[str | int] | None = None,
                 reference: Callable | None = None) -> None:
        if not hasattr(kernel, "grad"):
            raise TypeError(f"taichi_op: {kernel!r} is not a @ti.kernel (it has no .grad)")
        super().__init__(name or getattr(kernel, "__name__", "taichi_op"))
        self.kernel = kernel
        self.output_shape = output_shape
        self.reference = reference
        self.inputs, self.output_name, self.params = _kernel_params(kernel)
        if differentiable is None:
            diff = set(range(len(self.inputs)))
        else:
            diff = set()
            for d in differentiable:
                if isinstance(d, str):
                    if d not in self.inputs:
                        raise ValueError(f"taichi_op '{self.name}': {d!r} is not an input "
                                         f"(inputs: {', '.join(self.inputs)})")
                    diff.add(self.inputs.index(d))
                elif isinstance(d, int) and -len(self.inputs) <= d < len(self.inputs):
                    diff.add(d % len(self.inputs))
                else:
                    raise ValueError(f"taichi_op '{self.name}': no input #{d!r} "
                                     f"(inputs: {', '.join(self.inputs)})")
        self.differentiable = tuple(i in diff for i in range(len(self.inputs)))
        self._autodiff = self._autodiff_forward

    # -- dispatch ------------------------------------------------------------------------
    def forward_of(self, backend: type) -> Callable:
        """A forward registered with `@op.forward` first, then the kernel on
        Taichi, then the reference composition on any other backend."""
        for cls in backend.__mro__:
            fn = self._forwards.get(cls)
            if fn is not None:
                return fn
        if _is_taichi(backend):
            return lambda *xs, **params: self._run(backend, xs, params, tracked=False)[0]
        return lambda *xs, **params: self._run_reference(backend, xs, params)

    def _autodiff_forward(self, B: type, *xs: Any, **params: Any) -> Any:
        inner = B.InnerBackend
        if not _is_taichi(inner):
            return self._run_reference(B, xs, params)
        match TaichiKernelBackward(self).prepare([x.node for x in xs], B).stateful():
            case Tracked() as prep:
                out, state = self._run(inner, [x.primitive for x in xs], params, tracked=True)
                return prep.finish(state, out)
            case Untracked() as prep:
                out, _ = self._run(inner, [x.primitive for x in xs], params, tracked=False)
                return prep.finish(out)

    # -- the kernel ----------------------------------------------------------------------
    def _check_arity(self, xs: Sequence[Any], params: dict) -> None:
        if len(xs) != len(self.inputs):
            raise TypeError(f"op '{self.name}' takes {len(self.inputs)} input tensor(s) "
                            f"({', '.join(self.inputs)}), got {len(xs)}")
        unknown = set(params) - set(self.params)
        if unknown:
            raise TypeError(f"op '{self.name}': unknown keyword argument(s) {sorted(unknown)} "
                            f"(kernel params: {', '.join(self.params) or 'none'})")
        missing = [p for p in self.params if p not in params and p != "dtype"]
        if missing:
            raise TypeError(f"op '{self.name}': missing keyword argument(s) "
                            f"{', '.join(repr(p) for p in missing)} for the kernel")

    def _kernel_args(self, params: dict, ti_dtype: Any) -> tuple:
        """The kernel's trailing arguments: the params, `dtype` filled in."""
        return tuple(params[p] if p in params else ti_dtype for p in self.params)

    def _run(self, T: type, xs: Sequence[Any], params: dict, tracked: bool) -> tuple:
        """Run the kernel on Taichi primitives: (output primitive, state or None)."""
        import taichi as ti

        self._check_arity(xs, params)
        if not xs:
            raise TypeError(f"op '{self.name}' needs at least one input tensor")
        device = T.float_device(xs[0])
        for x in xs[1:]:
            if T.float_device(x) != device:
                raise ValueError(f"op '{self.name}': inputs are on different devices "
                                 f"({device!r} and {T.float_device(x)!r})")
        if tracked and getattr(device, "kind", "cpu") in ("vulkan", "metal"):
            raise NotImplementedError(
                f"op '{self.name}': Taichi 1.7.4 computes no ndarray gradients on {device!r}: on its SPIR-V "
                "backends kernel.grad leaves every .grad at zero (taichi-dev/taichi#8524). Run the op on "
                "TaichiDevice.cpu() or .cuda() to differentiate it; its forward runs here.")
        dtype = np.result_type(*[np.dtype(T.float_dtype(x)) for x in xs])
        shapes = [tuple(T.float_shape(x)) for x in xs]
        kw = {p: params[p] for p in self.params if p in params}
        out_shape = tuple(int(s) for s in self.output_shape(*shapes, **kw))
        tdt = _ti_dtype(dtype)
        if math.prod(out_shape) == 0:  # nothing to compute
            out = T.float_empty(out_shape, device, dtype)
            return out, (_KernelState(None, None, (), dtype, shapes) if tracked else None)
        for name, shape in zip(self.inputs, shapes):
            if math.prod(shape) == 0:
                raise ValueError(f"op '{self.name}': input {name!r} of shape {list(shape)} has no element, "
                                 "and a Taichi kernel cannot take an empty ndarray")
        args = self._kernel_args(params, tdt)
        ins = [_to_nd(T, x, dtype, tracked and d) for x, d in zip(xs, self.differentiable)]
        out_nd = ti.ndarray(tdt, out_shape, needs_grad=tracked)
        self.kernel(*ins, out_nd, *args)
        out = _from_nd(T, out_nd, device, dtype)
        if not tracked:
            return out, None
        return out, _KernelState(ins, out_nd, args, dtype, shapes)

    # -- other backends ----------------------------------------------------------------
    def _run_reference(self, B: type, xs: Sequence[Any], params: dict) -> Any:
        self._check_arity(xs, params)
        if self.reference is None:
            raise NotImplementedError(
                f"op '{self.name}' is a Taichi kernel and runs on the Taichi backend only; "
                f"{B.name()!r} needs a reference composition: taichi_op(..., reference=fn)")
        from burnbook.tensor import Tensor

        kw = {p: params[p] for p in self.params if p in params}
        ts = [Tensor[B, len(B.float_shape(x))].from_primitive(x) for x in xs]
        return self.reference(*ts, **kw).into_primitive()

    def apply(self, *tensors: Any, out_type: type | None = None, **params: Any) -> Any:
        """Run the op on `Tensor`s of one backend; the result is a `Tensor` of
        the output's rank (or of `out_type`)."""
        if not tensors:
            raise TypeError(f"op '{self.name}' needs at least one input tensor")
        backend = type(tensors[0])._B
        out = self(backend, *[t.into_primitive() for t in tensors], **params)
        if out_type is None:
            from burnbook.tensor import Tensor

            out_type = Tensor[backend, len(backend.float_shape(out))]
        return out_type.from_primitive(out)

    def __repr__(self) -> str:
        return (f"TaichiKernelOp({self.name!r}, inputs={list(self.inputs)}, "
                f"differentiable={[n for n, d in zip(self.inputs, self.differentiable) if d]})")


def taichi_op(kernel: Any, output_shape: Callable, *, name: str | None = None,
              differentiable: Sequence[str | int] | None = None,
              reference: Callable | None = None) -> TaichiKernelOp:
    """Make a trainable op out of a `@ti.kernel`.

    kernel:         `kernel(*inputs, output, *params)` (module docstring).
    output_shape:   `output_shape(*input_shapes, **params) -> shape`; raise a
                    ValueError for shapes the kernel does not handle.
    name:           the op's name in errors and in the graph (default: the
                    kernel's name).
    differentiable: the inputs (names or positions) that get gradients;
                    default all. The others are constants.
    reference:      `reference(*tensors, **params) -> Tensor`, the same
                    computation in ordinary tensor ops: run on every backend
                    other than Taichi, and the thing to `check_grad` against.

    Taichi's autodiff gives wrong gradients *silently* when a kernel breaks
    its rules (module docstring); always verify a new kernel with
    `check_grad(lambda *t: op.apply(*t), *tensors, reference=reference)`.
    """
    return TaichiKernelOp(kernel, output_shape, name=name, differentiable=differentiable,
                          reference=reference)


__all__ = ["TaichiKernelBackward", "TaichiKernelOp", "taichi_op"]
