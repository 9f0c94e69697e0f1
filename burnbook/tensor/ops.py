"""Options of the module operations (Burn's `burn::tensor::ops`).

    from burnbook.tensor.ops import ConvOptions, ConvTransposeOptions
    ConvOptions(stride=[2, 2], padding=[1, 1], dilation=[1, 1], groups=1)

Each setting is an int (the same for every spatial dim) or one value per
spatial dim; `burnbook.tensor.module` checks them against the tensors. The
classes live with the backend protocol, which receives them.
"""

from burnbook.backend.module_ops import (
    ConvOptions, ConvTransposeOptions, adaptive_bins, conv_output_size, conv_transpose_output_size,
    pool_output_size,
)

__all__ = [
    "ConvOptions", "ConvTransposeOptions", "conv_output_size", "conv_transpose_output_size",
    "pool_output_size", "adaptive_bins",
]
