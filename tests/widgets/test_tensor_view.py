"""TensorView: heatmap data equals the tensor, MNIST-shaped batches become
an image grid, statistics (with NaN / Inf counts) equal NumPy's."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

from burnbook import Tensor  # noqa: E402
from burnbook.backend import Autodiff, NdArray  # noqa: E402
from burnbook.widgets import TensorView  # noqa: E402
from burnbook.widgets.tensor_view import PNG_CELLS, image_grid, tensor_stats  # noqa: E402


def batch(n=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 28, 28)).astype(np.float32)


def test_heatmap_data_equals_the_tensor():
    values = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    t = Tensor[NdArray, 2].from_data(values)
    view = TensorView(t)
    assert view.mode == "heatmap"
    heat = view.figure().data[0]
    assert heat.name == "tensor" and heat.type == "heatmap"
    np.testing.assert_array_equal(np.asarray(heat.z), values)
    # A rank-1 tensor is one row, on an autodiff backend too.
    row = TensorView(Tensor[Autodiff[NdArray], 1].from_floats([1.0, -2.0, 3.0]).require_grad())
    np.testing.assert_array_equal(np.asarray(row.figure().data[0].z), [[1.0, -2.0, 3.0]])
    assert "backend autodiff<ndarray>" in row.summary()


def decode_png(uri: str) -> np.ndarray:
    """RGBA pixels of a PNG data URI as written by TensorView (no filtering)."""
    data = base64.b64decode(uri.split(",", 1)[1])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0] == zlib.crc32(tag + body)
        if tag == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    w, h = size
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 4 * w)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, 4)


def test_mnist_batches_become_an_image_grid():
    images = batch(5)
    flat = TensorView(Tensor[NdArray, 3].from_data(images), columns=3)
    with_channel = TensorView(Tensor[NdArray, 4].from_data(images.reshape(5, 1, 28, 28)), columns=3)
    assert flat.mode == with_channel.mode == "grid"
    z = flat.grid()
    np.testing.assert_array_equal(z, with_channel.grid())
    assert z.shape == (2 * 28 + 1, 3 * 28 + 2)  # 2 rows of 3, 1-cell gaps
    np.testing.assert_array_equal(z[:28, :28], images[0])
    np.testing.assert_array_equal(z[:28, 29:57], images[1])
    np.testing.assert_array_equal(z[29:, :28], images[3])
    assert np.isnan(z[28, :]).all() and np.isnan(z[29:, 57:]).all()  # gaps and the empty cell


def test_a_large_grid_is_a_png_of_the_values():
    images = batch(5)
    view = TensorView(images, columns=3)
    assert view.grid().size > PNG_CELLS
    trace = view.figure().data[0]
    assert trace.type == "image" and trace.name == "images"
    rgba = decode_png(trace.source)
    grid = view.grid()
    assert rgba.shape == grid.shape + (4,)
    finite = np.isfinite(grid)
    np.testing.assert_array_equal(rgba[..., 3], np.where(finite, 255, 0))  # gaps are transparent
    # Greys_r maps low to black and high to white, monotonically.
    low, high = np.nanmin(grid), np.nanmax(grid)
    expected = np.rint((grid[finite] - low) / (high - low) * 255)
    grey = rgba[..., 0][finite].astype(float)
    assert rgba[..., 0][grid == low][0] == 0 and rgba[..., 0][grid == high][0] == 255
    order = np.argsort(expected, kind="stable")
    assert (np.diff(grey[order]) >= 0).all()
    # A small grid keeps the exact values in a heatmap.
    small = TensorView(images[:, :8, :8])
    assert small.figure().data[0].type == "heatmap"
    np.testing.assert_array_equal(np.asarray(small.figure().data[0].z), small.grid())


def test_labels_and_image_cap():
    images = batch(10)
    view = TensorView(images, labels=np.arange(10) % 3, max_images=4)
    fig = view.figure()
    assert [a.text for a in fig.layout.annotations] == ["0: 0", "1: 1", "2: 2", "3: 0"]
    assert view.images().shape == (4, 28, 28)
    assert "4 of 10 images shown" in view.summary()
    # The statistics cover the whole tensor, not only the images shown.
    assert f"mean {images.astype(np.float64).mean():.4g}" in view.summary()
    # Channels of a 4-D tensor are numbered item/channel.
    kernels = TensorView(np.zeros((2, 3, 3, 3), np.float32))
    assert [a.text for a in kernels.figure().layout.annotations][:4] == ["0/0", "0/1", "0/2", "1/0"]


def test_statistics_count_nan_and_inf():
    a = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 5.0]], dtype=np.float32)
    stats = tensor_stats(a)
    finite = np.array([1.0, 3.0, 5.0])
    assert stats == {"min": 1.0, "max": 5.0, "mean": pytest.approx(finite.mean()),
                     "std": pytest.approx(finite.std()), "nan": 1, "inf": 2}
    view = TensorView(Tensor[NdArray, 2].from_data(a))
    assert view.summary() == ("TensorView: shape [2, 3], dtype f32, backend ndarray\n"
                              f"min 1, max 5, mean 3, std {finite.std():.4g}, NaN 1, Inf 2")
    assert "<b>NaN</b> 1" in view.info.value and "<b>Inf</b> 2" in view.info.value
    assert tensor_stats(np.array([np.nan]))["nan"] == 1


def test_int_and_bool_tensors():
    from burnbook import Bool, Int

    ints = TensorView(Tensor[NdArray, 2, Int].from_data(np.array([[1, 2], [3, 4]])))
    assert "dtype i64" in ints.summary() and "mean 2.5" in ints.summary()
    bools = TensorView(Tensor[NdArray, 1, Bool].from_data([True, False, True, True]))
    assert "dtype bool" in bools.summary() and "mean 0.75" in bools.summary()


def test_image_grid_helper():
    imgs = np.arange(2 * 2 * 2, dtype=np.float32).reshape(2, 2, 2)
    grid = image_grid(imgs, columns=2, gap=1)
    expected = np.array([[0, 1, np.nan, 4, 5], [2, 3, np.nan, 6, 7]], dtype=np.float32)
    np.testing.assert_array_equal(grid, expected)


def test_bundle_and_errors():
    view = TensorView(batch(3))
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == view.summary()
    assert "text/html" not in bundle and "bb-tensor-view" in view._dom_classes
    with pytest.raises(ValueError, match="rank 1 to 4, got rank 5"):
        TensorView(np.zeros((1, 1, 1, 1, 1)))
    with pytest.raises(ValueError, match="rank 0"):
        TensorView(np.float32(3.0))
    with pytest.raises(TypeError, match="array of Python objects"):
        TensorView([object(), object()])
    with pytest.raises(ValueError, match="max_images"):
        TensorView(batch(2), max_images=0)


def test_the_colour_note_has_its_own_line_above_the_labels():
    """A grid drawn as a picture says which values its colours span in a
    line under the title, not among the image labels, and the top margin
    holds the title, that line and the labels' row one under the other."""
    from burnbook.widgets.tensor_view import LABEL_PX, NOTE_PX, TITLE_PX

    images = batch(8)
    fig = TensorView(images, labels=np.arange(8), title="eight images").figure()
    assert [a.text for a in fig.layout.annotations] == [f"{i}: {i}" for i in range(8)]
    low, high = images.min(), images.max()
    assert fig.layout.title.subtitle.text == f"colours: {low:.4g} to {high:.4g} (Greys_r)"
    assert fig.layout.margin.t == TITLE_PX + NOTE_PX + LABEL_PX
    assert fig.layout.title.yref == "container" and fig.layout.title.yanchor == "top"
    small = TensorView(images[:, :8, :8]).figure()   # a heatmap of values: no note, a line less
    assert small.layout.title.subtitle.text is None and small.layout.margin.t == TITLE_PX + LABEL_PX
    # The plot keeps its size: the margin grows with the figure.
    assert fig.layout.height - fig.layout.margin.t == small.layout.height - small.layout.margin.t


def test_the_static_figure_writes_the_summary_under_the_plot():
    """What a reader without a kernel sees (the PNG alone) carries the
    statistics the live view shows in its panel."""
    view = TensorView(Tensor[Autodiff[NdArray], 3].from_data(batch(4)))
    live, static = view.figure(), view.static_figure()
    caption = static.layout.annotations[-1]
    assert caption.text == view.summary().replace("<", "&lt;").replace(">", "&gt;").replace("\n", "<br>")
    assert "autodiff&lt;ndarray&gt;" in caption.text and "NaN 0, Inf 0" in caption.text
    assert caption.yref == "paper" and caption.y == 0 and caption.yshift < 0 and caption.xanchor == "left"
    grown = static.layout.height - live.layout.height
    assert grown > 2 * 12 and static.layout.margin.b - live.layout.margin.b == grown


def test_the_static_png_is_the_static_figure(real_png):
    from .pngs import png_facts

    view = TensorView(batch(4))
    bundle, metadata = view._repr_mimebundle_()
    width, height, ink = png_facts(base64.b64decode(bundle["image/png"]))
    assert (width, height) == (900, view.static_figure().layout.height) and ink > 0.05
    assert metadata["image/png"]["height"] == height
