"""The operator families: each module registers its emitters (and their
checks) in the operator table (`table`) with `@op`. Importing this package
imports every family, which fills the table; `walk` does, and nothing the
families import imports this package.

- `arithmetic`: Identity, Relu and the first activations, Add/Sub/Mul/Div,
  Pow, Equal, Where, Clip, MatMul, Gemm, ReduceMean/ReduceSum;
- `elementwise`: unary math, more activations, comparisons, logic, bitwise,
  variadic Max/Min/Sum/Mean, Mod, Cast, CastLike, Dropout;
- `layout`: Flatten, Reshape, Transpose, Concat, Gather, Slice, Squeeze,
  Unsqueeze, Shape, Constant;
- `index`: the other reductions, arg-max/min, TopK, Hardmax, CumSum, the
  gather/scatter family, NonZero, Compress, OneHot;
- `shape`: Expand, Tile, Pad, Split, Range, Size, ConstantOfShape, EyeLike,
  Trilu, DepthToSpace, SpaceToDepth, ReverseSequence, the random generators;
- `conv_pool`: Conv, ConvTranspose, MaxPool, AveragePool, LpPool, the global pools;
- `norm`: BatchNormalization, LayerNormalization, InstanceNormalization,
  GroupNormalization, LpNormalization, MeanVarianceNormalization,
  RMSNormalization, LRN;
- `resampling`: Resize, GridSample;
- `products`: Einsum, MatMulInteger, Attention;
- `recurrent`: LSTM, GRU, RNN;
- `control`: If, Scan;
- `loop`: Loop.
"""

from . import (
    arithmetic, control, conv_pool, elementwise, index, layout, loop, norm, products, recurrent, resampling, shape,
)

__all__ = ["arithmetic", "elementwise", "layout", "index", "shape", "conv_pool", "norm", "resampling", "products",
           "recurrent", "control", "loop"]
