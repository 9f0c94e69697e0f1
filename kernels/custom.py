"""Device copies between burnbook's flat buffers and the shaped `ti.ndarray`s
that user kernels take (`burnbook.autodiff.taichi_op`).

A backend buffer is flat and 1-D (burnbook.backend.taichi.launcher.buffer); a user kernel wants to
index `x[b, i, j]`. These two kernels move a contiguous run of a flat buffer
into an n-d ndarray and back, in row-major order, on whatever arch the runtime
runs (no host round trip on a GPU). They compile once per dtype and rank.
Called through Taichi's own kernel call, not the backend's launcher (its cache
key assumes 1-D arrays, and these take n-d ones).
"""

import taichi as ti


@ti.kernel
def _flat_to_nd(src: ti.types.ndarray(), offset: ti.i32, dst: ti.types.ndarray()):
    for I in ti.grouped(dst):
        k = 0
        for d in ti.static(range(I.n)):
            k = k * dst.shape[d] + I[d]
        dst[I] = src[offset + k]


@ti.kernel
def _nd_to_flat(src: ti.types.ndarray(), dst: ti.types.ndarray(), offset: ti.i32):
    for I in ti.grouped(src):
        k = 0
        for d in ti.static(range(I.n)):
            k = k * src.shape[d] + I[d]
        dst[offset + k] = src[I]


def flat_to_nd(src, offset: int, dst) -> None:
    """dst (n-d ndarray) <- src[offset : offset + dst.size] (flat), row-major."""
    _flat_to_nd(src, int(offset), dst)


def nd_to_flat(src, dst, offset: int = 0) -> None:
    """dst[offset : offset + src.size] (flat) <- src (n-d ndarray), row-major."""
    _nd_to_flat(src, dst, int(offset))


__all__ = ["flat_to_nd", "nd_to_flat"]
