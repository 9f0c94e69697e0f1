"""Helpers shared by the layers: which backend a config builds on, and how
settings print.

Burn picks a module's backend from the type (`config.init::<B>(&device)`);
Python has no such inference, so every `...Config.init(device, backend=None)`
takes the backend as an optional keyword. Left out, it is the autodiff
backend over the device's backend (`Autodiff[NdArray]` for `Cpu`), because in
Burn a model you build in order to train lives on an autodiff backend;
`model.valid()` then gives the same model on the plain backend, for
validation and inference. Pass `backend=NdArray` to build an inference-only
model directly.
"""

from __future__ import annotations

from typing import Any, Sequence

from burnbook.config import ConfigError


def resolve_backend(device: Any = None, backend: type | None = None) -> type:
    """The backend class a config builds its tensors on (see module doc)."""
    if backend is not None:
        return backend
    from burnbook.autodiff import Autodiff
    from burnbook.backend import NdArray
    from burnbook.backend.ndarray import Cpu

    if device is None or isinstance(device, Cpu):
        return Autodiff[NdArray]
    if type(device).__name__ == "TaichiDevice":
        from burnbook.backend import Taichi

        return Autodiff[Taichi]
    raise TypeError(
        f"cannot tell which backend the device {device!r} belongs to; "
        "pass it explicitly: config.init(device, backend=Autodiff[NdArray])"
    )


def device_or_default(device: Any, backend: type) -> Any:
    """`device`, or the backend's default device when None."""
    return backend.default_device() if device is None else device


def show(value: Any) -> Any:
    """A setting as Burn prints it: booleans in lower case, None as `None`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def on_backend_of(t: Any, like: Any) -> Any:
    """`t` moved onto `like`'s backend and device when they differ, so
    constants built for the training backend also work after `valid()`."""
    if t._B is like._B:
        return t
    from burnbook.tensor import Tensor

    return Tensor[like._B, t.ndim, t._K].from_data(t.to_numpy(), like.device())


def check_config(cfg: Any, *, sizes: Sequence[str] = (), non_negative: Sequence[str] = (),
                 probabilities: Sequence[str] = (), pairs: Sequence[str] = ()) -> None:
    """Refuse a layer config that no layer can be built from, with a
    `ConfigError` naming the config class, the field and the value.

    Every size and count in `sizes` (an int, or each int of a list) must be
    >= 1. PyTorch accepts `in_features=0` and builds an empty layer, but a
    layer of width 0 has nothing to train and a negative one has no meaning,
    so here both fail at once instead of as a ZeroDivisionError inside an
    initializer. Fields in `non_negative` (paddings, epsilons) must be >= 0,
    `probabilities` must lie in [0, 1], and each field in `pairs` holds
    exactly two values ([height, width], [in, out]).

    Configs call it from `__post_init__` (construction, `with_*`, loading)
    and again from `init`, since fields can be reassigned in between.
    """
    name = type(cfg).__name__
    for field in pairs:
        value = getattr(cfg, field)
        if len(value) != 2:
            raise ConfigError(f"{name}: {field} must hold 2 values, got {len(value)}: {value}")
    for field, low, what in ([(f, 1, "a size or count") for f in sizes]
                             + [(f, 0, "a padding or epsilon") for f in non_negative]):
        value = getattr(cfg, field)
        items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
        for i, item in items:
            if item < low:
                where = field if i is None else f"{field}[{i}]"
                whole = "" if i is None else f" ({field}={value})"
                raise ConfigError(f"{name}: {where} must be >= {low} ({what}), got {item}{whole}")
    for field in probabilities:
        value = getattr(cfg, field)
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"{name}: {field} must lie in [0, 1] (a probability), got {value}")
