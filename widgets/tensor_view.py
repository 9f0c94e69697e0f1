"""`TensorView`: a tensor as a heatmap, or a batch of images as a grid.

- rank 1 `[n]`: one row of cells; rank 2 `[rows, cols]`: a heatmap;
- rank 3 `[batch, height, width]` (an MNIST batch): a grid of images;
- rank 4 `[batch, channels, height, width]`: a grid with one image per
  (item, channel), so `[batch, 1, 28, 28]` is the same grid as `[batch, 28, 28]`
  and a conv weight `[out, in, kh, kw]` shows every kernel.

Whatever the rank, the view reports the shape, dtype, backend and the
statistics over finite values (min, max, mean, std) with the number of NaN
and Inf values. A grid shows at most `max_images` images; the statistics
always cover the whole tensor. Heatmaps and small grids carry the exact
values (hover shows them); a grid of more than `PNG_CELLS` cells is drawn
as a PNG with 256 colour levels, which keeps saved notebooks small.
"""

from __future__ import annotations

import base64
import html
import math
import struct
import zlib
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ._static import LAYOUT, View, add_caption

__all__ = ["TensorView", "tensor_stats", "image_grid", "png_data_uri", "PNG_CELLS"]

# A grid with more cells than this is sent as a PNG (256 colour levels)
# rather than as a heatmap of float32 values: an 8-digit MNIST batch is
# ~5 KB instead of ~35 KB in the saved notebook.
PNG_CELLS = 4096
# The top margin of a grid, in px: the title's line (16 px text and its
# padding), the line of image labels above the grid, and the colour note's line.
TITLE_PX, LABEL_PX, NOTE_PX = 34, 16, 16


def tensor_stats(a: np.ndarray) -> dict[str, float | int]:
    """min, max, mean, std over the finite values, and the NaN / Inf counts."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.astype(np.int8)
    f = a.astype(np.float64)
    nan = int(np.isnan(f).sum())
    inf = int(np.isinf(f).sum())
    finite = f[np.isfinite(f)]
    if finite.size == 0:
        nanv = float("nan")
        return {"min": nanv, "max": nanv, "mean": nanv, "std": nanv, "nan": nan, "inf": inf}
    return {"min": float(finite.min()), "max": float(finite.max()), "mean": float(finite.mean()),
            "std": float(finite.std()), "nan": nan, "inf": inf}


def image_grid(images: np.ndarray, columns: int, gap: int = 1) -> np.ndarray:
    """Tile `[n, height, width]` into one 2-D array, `columns` images per
    row, separated by `gap` cells of NaN (drawn blank)."""
    n, h, w = images.shape
    rows = math.ceil(n / columns)
    grid = np.full((rows * (h + gap) - gap, columns * (w + gap) - gap), np.nan, dtype=np.float32)
    for i in range(n):
        r, c = divmod(i, columns)
        grid[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w] = images[i]
    return grid


def png_data_uri(grid: np.ndarray, colorscale: str, low: float, high: float) -> str:
    """`grid` (2-D; NaN drawn transparent) as a `data:image/png` URI, values
    mapped linearly from [low, high] onto 256 colours of `colorscale`."""
    lut = np.array([[int(v) for v in c[c.index("(") + 1:-1].split(",")]
                    for c in sample_colorscale(colorscale, list(np.linspace(0.0, 1.0, 256)))], dtype=np.uint8)
    finite = np.isfinite(grid)
    level = np.zeros(grid.shape, dtype=np.uint8)
    span = (high - low) or 1.0
    level[finite] = np.clip(np.rint((grid[finite] - low) / span * 255.0), 0, 255).astype(np.uint8)
    rgba = np.zeros(grid.shape + (4,), dtype=np.uint8)
    rgba[..., :3] = lut[level]
    rgba[..., 3] = np.where(finite, 255, 0)
    return "data:image/png;base64," + base64.b64encode(_png(rgba)).decode("ascii")


def _png(rgba: np.ndarray) -> bytes:
    """A minimal PNG file (8-bit RGBA, no filtering) of `rgba` `[h, w, 4]`."""
    h, w, _ = rgba.shape
    raw = b"".join(b"\x00" + rgba[r].tobytes() for r in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


class TensorView(View):
    """A tensor (a burnbook `Tensor` of any backend, or anything NumPy can
    read) as a heatmap or an image grid, with its statistics.

    `labels` names the images of a batch (e.g. the targets); `max_images`
    caps the grid; `columns` sets the images per row (default: up to 8);
    `title` replaces the default title.
    """

    def __init__(self, tensor: Any, *, labels: Sequence[Any] | None = None, max_images: int = 32,
                 columns: int | None = None, title: str | None = None, colorscale: str | None = None) -> None:
        super().__init__("bb-tensor-view")
        self.array, self.dtype, self.backend = _read(tensor)
        if self.array.ndim == 0 or self.array.ndim > 4:
            raise ValueError(f"TensorView: shows tensors of rank 1 to 4, got rank {self.array.ndim} "
                             f"(shape {list(self.array.shape)})")
        if max_images < 1:
            raise ValueError(f"TensorView: max_images must be at least 1, got {max_images}")
        self.shape = list(self.array.shape)
        self.stats = tensor_stats(self.array)
        self.max_images = int(max_images)
        self.labels = None if labels is None else [str(v) for v in np.asarray(labels).reshape(-1)]
        self._columns = columns
        self._title = title
        self._colorscale = colorscale
        self.refresh()

    @property
    def mode(self) -> str:
        """"heatmap" (rank 1 or 2) or "grid" (rank 3 or 4)."""
        return "heatmap" if self.array.ndim <= 2 else "grid"

    def images(self) -> np.ndarray:
        """The images the grid shows, `[n, height, width]` (n <= max_images)."""
        a = self.array
        if a.ndim == 4:
            a = a.reshape(-1, a.shape[2], a.shape[3])
        return a[:self.max_images]

    def grid(self) -> np.ndarray:
        """The images shown, tiled into one 2-D float32 array (NaN gaps)."""
        imgs = self.images()
        return image_grid(imgs, self._columns or min(8, imgs.shape[0]))

    def _image_labels(self, n: int) -> list[str]:
        """"item" (or "item/channel"), with the item's label when given."""
        per = self.array.shape[1] if self.array.ndim == 4 else 1
        names = []
        for i in range(n):
            item, channel = divmod(i, per)
            name = str(item) if per == 1 else f"{item}/{channel}"
            if self.labels is not None and item < len(self.labels):
                name += f": {self.labels[item]}"
            names.append(name)
        return names

    # -- text ------------------------------------------------------------------------------
    def summary(self) -> str:
        s = self.stats
        head = f"TensorView: shape {self.shape}, dtype {self.dtype}"
        if self.backend:
            head += f", backend {self.backend}"
        if self.mode == "grid":
            n = self.images().shape[0]
            total = self.array.shape[0] * (self.array.shape[1] if self.array.ndim == 4 else 1)
            head += f", {n} of {total} images shown"
        return (f"{head}\nmin {s['min']:.4g}, max {s['max']:.4g}, mean {s['mean']:.4g}, std {s['std']:.4g}, "
                f"NaN {s['nan']}, Inf {s['inf']}")

    def info_html(self) -> str:
        s = self.stats
        cells = [("shape", str(self.shape)), ("dtype", self.dtype), ("backend", self.backend or "-"),
                 ("min", f"{s['min']:.4g}"), ("max", f"{s['max']:.4g}"), ("mean", f"{s['mean']:.4g}"),
                 ("std", f"{s['std']:.4g}"), ("NaN", str(s["nan"])), ("Inf", str(s["inf"]))]
        row = "".join(f"<td style='padding-right:1.2em'><b>{k}</b> {html.escape(v)}</td>" for k, v in cells)
        return f"<table class='bb-summary'><tr>{row}</tr></table>"

    # -- the figure ----------------------------------------------------------------------
    def figure(self) -> go.Figure:
        """A heatmap trace named "tensor" (rank 1-2) or "images" (a grid);
        row 0 at the top, as a matrix or an image is read. A grid drawn as
        a picture says in a line under the title which values its colours
        span (the picture itself carries no values)."""
        a = self.array.astype(np.float32)
        fig = go.Figure()
        note = None
        top = LAYOUT["margin"]["t"]
        if self.mode == "heatmap":
            z = a.reshape(1, -1) if a.ndim == 1 else a
            fig.add_trace(go.Heatmap(z=z, name="tensor", colorscale=self._colorscale or "RdBu_r",
                                     hovertemplate="[%{y}, %{x}] = %{z:.4g}<extra></extra>"))
            rows, cols = z.shape
            height = int(min(600, max(220, 140 + rows * min(24, 520 / max(rows, 1)))))
        else:
            imgs = self.images()
            n, h, w = imgs.shape
            columns = self._columns or min(8, n)
            grid = self.grid()
            scale = self._colorscale or "Greys_r"
            if grid.size <= PNG_CELLS:
                fig.add_trace(go.Heatmap(z=grid, name="images", colorscale=scale,
                                         hovertemplate="x %{x}, y %{y}: %{z:.4g}<extra></extra>"))
            else:
                low, high = float(np.nanmin(grid)), float(np.nanmax(grid))
                fig.add_trace(go.Image(source=png_data_uri(grid, scale, low, high), name="images",
                                       x0=0, y0=0, dx=1, dy=1,
                                       hovertemplate="x %{x}, y %{y}<extra></extra>"))
                note = f"colours: {low:.4g} to {high:.4g} ({scale})"
            for i, name in enumerate(self._image_labels(n)):
                r, c = divmod(i, columns)
                fig.add_annotation(x=c * (w + 1) + w / 2 - 0.5, y=r * (h + 1) - 0.6, text=name, showarrow=False,
                                   yanchor="bottom", font={"size": 10})
            rows = math.ceil(n / columns)
            # The title, then the image labels just above the grid (their row
            # ends TITLE_PX + LABEL_PX below the top; a colour note adds a line).
            top = TITLE_PX + LABEL_PX + (NOTE_PX if note else 0)
            height = int(min(900, 120 + rows * max(70, 560 / columns * h / w))) + top - LAYOUT["margin"]["t"]
        title: dict[str, Any] = {"text": self._title or f"{self.shape} {self.dtype}", "x": 0.01,
                                 "xanchor": "left", "y": 1.0, "yref": "container", "yanchor": "top",
                                 "pad": {"t": 8}, "font": {"size": 16}}
        if note:
            title["subtitle"] = {"text": note, "font": {"size": 11}}
        fig.update_layout(**LAYOUT)
        fig.update_layout(
            title=title, height=height, margin={"t": top},
            xaxis={"showgrid": False, "zeroline": False, "constrain": "domain"},
            yaxis={"showgrid": False, "zeroline": False, "autorange": "reversed", "scaleanchor": "x"}
            if self.mode == "grid" else {"showgrid": False, "zeroline": False, "autorange": "reversed"})
        return fig

    def static_figure(self) -> go.Figure:
        """The figure with the summary written under it: the shape, dtype and
        statistics a reader should check first, which the live view shows in
        its panel and a static image would otherwise lose."""
        return add_caption(self.figure(), self.summary())


def _read(tensor: Any) -> tuple[np.ndarray, str, str]:
    """(values, dtype name, backend name) of a burnbook tensor or an array."""
    backend = getattr(tensor, "backend", None)
    if backend is not None and hasattr(tensor, "to_numpy"):
        return np.asarray(tensor.to_numpy()), str(tensor.dtype), backend.name()
    try:
        a = np.asarray(tensor)
    except Exception as e:  # noqa: BLE001 - any conversion failure means "not an array"
        raise TypeError(f"TensorView: expected a Tensor or an array, got {type(tensor).__name__}") from e
    if a.dtype == object:
        raise TypeError(f"TensorView: expected numbers, got an array of Python objects from {type(tensor).__name__}")
    from burnbook.backend.base import np_dtype_name

    return a, np_dtype_name(a.dtype), ""
