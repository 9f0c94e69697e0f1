"""The helpers generated models call, imported there as `onnx_ops`
(`from burnbook.importer.onnx import runtime as onnx_ops`), for ONNX rules
the Tensor API does not spell out in one call: asymmetric padding, ONNX's
gather, reshape and reduction rules, shape values kept on the host,
rounding casts, the recurrences, control flow.

Each helper is written with Tensor operations, so it runs on every backend
and autodiff differentiates through it; the importer emits a plain Tensor
call whenever one exists. Scalars (ONNX rank 0) are tensors of shape `[1]`,
since burnbook has no rank-0 tensors.

The helpers live by family: `host` (inputs read back, host shape
arithmetic), `layout`, `elementwise`, `cast`, `reductions`, `index`,
`shapes`, `pooling`, `norm`, `resampling`, `products`, `recurrence`,
`control` (no module is named like a helper, so `onnx_ops.shape` is always
the function). `__all__`
below is the name list generated code may use (`guard` admits exactly these
as `onnx_ops.<name>`); files that ModelGen wrote earlier import this
package under the same name.
"""

from .cast import round_float, wrap_int
from .control import if_taken, loop_continues, loop_iteration, loop_stack, loop_trip_count, loop_true
from .elementwise import (
    acos, acosh, asin, asinh, atan, atanh, bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or,
    bitwise_right_shift, bitwise_xor, ceil, celu, clip, cosh, dropout, dropout_mask, elu, floor, int_pow, is_inf,
    maximum, minimum, mod, round_even, selu, shrink, sinh, tan, wrap_ints,
)
from .host import floats, host_equal, host_where, ints, tensor_like
from .index import (
    arg_extreme, compress, cumsum, gather_elements, gather_nd, hardmax, nonzero, one_hot, scatter_elements,
    scatter_nd, topk,
)
from .layout import align, flatten, gather, reshape, shape, slice_, squeeze, unsqueeze
from .norm import batch_norm_train, group_norm, instance_norm, layer_norm, lp_norm, lrn, mean_variance_norm, rms_norm
from .pooling import lp_pool, max_pool_with_indices, pad, pool
from .products import attention, einsum, matmul_integer
from .recurrence import recurrent, recurrent_layers
from .reductions import reduce, reduce_ext, saturate_reduction
from .resampling import grid_sample, resize
from .shapes import (
    bernoulli, constant_of_shape, depth_to_space, expand, eye_like, pad_nd, random_normal, random_uniform, range_,
    reverse_sequence, size, space_to_depth, split, tile, trilu,
)

__all__ = [
    "ints", "floats", "tensor_like", "host_equal", "host_where",  # host
    "shape", "align", "reshape", "flatten", "gather", "slice_", "squeeze", "unsqueeze",  # layout
    "round_even", "floor", "ceil", "tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "elu",
    "selu", "celu", "shrink", "is_inf", "maximum", "minimum", "mod", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "wrap_ints", "int_pow", "clip", "dropout",
    "dropout_mask",  # elementwise
    "round_float", "wrap_int",  # cast
    "reduce", "reduce_ext", "saturate_reduction",  # reductions
    "arg_extreme", "topk", "hardmax", "cumsum", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd",
    "nonzero", "compress", "one_hot",  # index
    "expand", "constant_of_shape", "tile", "pad_nd", "split", "range_", "size", "eye_like", "trilu",
    "depth_to_space", "space_to_depth", "reverse_sequence", "random_normal", "random_uniform", "bernoulli",  # shapes
    "pad", "pool", "max_pool_with_indices", "lp_pool",  # pooling
    "layer_norm", "batch_norm_train", "instance_norm", "group_norm", "lp_norm", "mean_variance_norm", "rms_norm",
    "lrn",  # norm
    "resize", "grid_sample",  # resampling
    "einsum", "matmul_integer", "attention",  # products
    "recurrent", "recurrent_layers",  # recurrence
    "loop_trip_count", "loop_continues", "loop_iteration", "loop_true", "loop_stack", "if_taken",  # control
]
