"""Reading the PNGs the widgets store, with zlib and NumPy only (no Pillow)."""

from __future__ import annotations

import struct
import zlib

import numpy as np

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}   # PNG colour type -> samples per pixel


def png_pixels(png: bytes) -> np.ndarray:
    """The image as a `[height, width, channels]` uint8 array (8-bit, not interlaced)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(png):
        (length,), kind = struct.unpack(">I", png[pos:pos + 4]), png[pos + 4:pos + 8]
        body = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in CHANNELS, header
    bpp = CHANNELS[colour]
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * bpp)
    out = np.zeros((height, width * bpp), dtype=np.int32)
    prev = np.zeros(width * bpp, dtype=np.int32)
    for y in range(height):
        kind, row = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind == 0:
            cur = row
        elif kind == 2:
            cur = (row + prev) % 256
        elif kind == 1:   # each sample adds the one bpp to its left: a running sum per channel
            cur = (np.cumsum(row.reshape(width, bpp), axis=0) % 256).reshape(-1)
        else:
            cur = np.zeros_like(row)
            for i in range(row.size):
                a = cur[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                if kind == 3:
                    cur[i] = (row[i] + (a + b) // 2) % 256
                else:   # Paeth
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                    cur[i] = (row[i] + pred) % 256
        out[y] = prev = cur
    return out.reshape(height, width, bpp).astype(np.uint8)


def png_facts(png: bytes) -> tuple[int, int, float]:
    """(width, height, ink): ink is the share of pixels that are not white."""
    pixels = png_pixels(png)
    rgb = pixels[..., :3] if pixels.shape[2] >= 3 else pixels[..., :1]
    return pixels.shape[1], pixels.shape[0], float((rgb < 245).any(axis=2).mean())
