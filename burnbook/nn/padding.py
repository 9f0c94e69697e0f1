"""`PaddingConfig1d` / `PaddingConfig2d`: how conv and pool layers pad.

Burn's enums become small `@config` families, like `Initializer`, saved as
tagged variants (`{"Explicit": {"height": 1, "width": 1}}`)::

    PaddingConfig2d.Valid             # no padding (also PaddingConfig2d.Valid())
    PaddingConfig2d.Same              # pad so that (at stride 1) the output keeps the input's size
    PaddingConfig2d.Explicit(1, 2)    # 1 row on top and bottom, 2 columns left and right

`Same` uses Burn's formula, p = ceil((s (size - 1) - size + k) / 2) with the
kernel's dilated span as k, computed from the input size at each forward.
For an odd (dilated) kernel at stride 1 that is PyTorch's `padding="same"`;
padding is symmetric, so an even kernel gives one extra row/column.
"""

from __future__ import annotations

import math

from burnbook.config import ConfigError, config

__all__ = ["PaddingConfig1d", "PaddingConfig2d"]


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> int:
    """Burn's `calculate_conv_padding` with size_out = size_in (never < 0)."""
    span = dilation * (kernel - 1) + 1
    return max(0, math.ceil((stride * (size - 1) - size + span) / 2))


@config
class PaddingConfig2d:
    """Base of the 2-D padding variants `.Valid`, `.Same`, `.Explicit(h, w)`."""

    def calculate(self, size: list, kernel: list, stride: list, dilation: list) -> tuple:
        """(pad_h, pad_w) for an input of spatial `size`."""
        raise NotImplementedError("use PaddingConfig2d.Valid, .Same or .Explicit(height, width)")

    def __call__(self):
        return self  # `PaddingConfig2d.Valid()` is `PaddingConfig2d.Valid`


@config
class PaddingConfig1d:
    """Base of the 1-D padding variants `.Valid`, `.Same`, `.Explicit(n)`."""

    def calculate(self, size: list, kernel: list, stride: list, dilation: list) -> tuple:
        raise NotImplementedError("use PaddingConfig1d.Valid, .Same or .Explicit(n)")

    def __call__(self):
        return self


def _check_padding(cfg: object, **values: int) -> None:
    for field, value in values.items():
        if value < 0:
            raise ConfigError(f"{type(cfg).__qualname__}: {field} must be >= 0 (a padding), got {value}")


def _variants(base: type, dims: int) -> None:
    @config
    class Valid(base):
        """No padding."""

        def calculate(self, size, kernel, stride, dilation) -> tuple:
            return (0,) * dims

        def __str__(self) -> str:
            return "Valid"

    @config
    class Same(base):
        """Enough padding to keep the input's size (at stride 1)."""

        def calculate(self, size, kernel, stride, dilation) -> tuple:
            return tuple(same_padding(*a) for a in zip(size, kernel, stride, dilation))

        def __str__(self) -> str:
            return "Same"

    if dims == 2:
        @config
        class Explicit(base):
            """`height` rows above and below, `width` columns left and right."""

            height: int
            width: int

            def __post_init__(self) -> None:
                _check_padding(self, height=self.height, width=self.width)

            def calculate(self, size, kernel, stride, dilation) -> tuple:
                return (self.height, self.width)

            def __str__(self) -> str:
                return f"Explicit({self.height}, {self.width})"
    else:
        @config
        class Explicit(base):
            """`padding` values on both ends."""

            padding: int

            def __post_init__(self) -> None:
                _check_padding(self, padding=self.padding)

            def calculate(self, size, kernel, stride, dilation) -> tuple:
                return (self.padding,)

            def __str__(self) -> str:
                return f"Explicit({self.padding})"

    for cls in (Valid, Same, Explicit):
        cls.__qualname__ = f"{base.__name__}.{cls.__name__}"
    base.Valid, base.Same, base.Explicit = Valid(), Same(), Explicit


_variants(PaddingConfig2d, 2)
_variants(PaddingConfig1d, 1)
