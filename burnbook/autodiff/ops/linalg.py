"""Linear algebra and conversions: matmul (batched, broadcast), cast, to_device."""

from __future__ import annotations

from .table import binary, unary, unbroadcast


@binary("matmul", save=True)
def matmul(B, g, n, x, y):
    # [..., m, k] @ [..., k, n]: dx = g @ y^T, dy = x^T @ g, each summed over
    # the batch dims it was broadcast along.
    px, py = n.parents
    gx = gy = None
    if px is not None:
        r = len(px.shape)
        gx = B.float_matmul(g, B.float_swap_dims(y, r - 2, r - 1))
        gx = unbroadcast(B, gx, n.shape[:-2] + px.shape[-2:], px.shape)
    if py is not None:
        r = len(py.shape)
        gy = B.float_matmul(B.float_swap_dims(x, r - 2, r - 1), g)
        gy = unbroadcast(B, gy, n.shape[:-2] + py.shape[-2:], py.shape)
    return gx, gy


def _source_dtype(inner, out, x, dtype):
    return (dtype, inner.float_dtype(x))


@unary("cast", state=_source_dtype)
def cast(B, g, n, x, out):
    return B.float_cast(g, n.args[1])


def _source_device(inner, out, x, device):
    return (device, inner.float_device(x))


@unary("to_device", state=_source_device)
def to_device(B, g, n, x, out):
    return B.float_to_device(g, n.args[1])
