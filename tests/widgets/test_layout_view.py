"""LayoutView: each element's line ends on the storage cell `layout_of` gives,
the storage row holds the values the tensor reads there (empty elsewhere),
the summary prints the layout, and the output carries a static PNG."""

from __future__ import annotations

import base64

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

from burnbook import Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.tensor import layout_of  # noqa: E402
from burnbook.widgets import LayoutView  # noqa: E402
from burnbook.widgets.storage_view import MAX_CELLS  # noqa: E402

from .pngs import png_pixels  # noqa: E402

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _x(backend=NdArray):
    return Tensor[backend, 2].from_data(X)


def _lines(fig):
    return [tr for tr in fig.data if tr.mode == "lines"]


def _storage_text(fig):
    # the storage row: markers with text at y == 0
    rows = [tr for tr in fig.data if tr.mode == "markers+text" and set(tr.y) == {0.0}]
    return [list(tr.text) for tr in rows]


@pytest.mark.parametrize("name, make, cells", [
    ("transpose", lambda x: x.T, [0, 3, 1, 4, 2, 5]),
    ("slice with a step", lambda x: x[:, 0:3:2], [0, 2, 3, 5]),
    ("broadcast", lambda x: x[0:1].expand([3, 3]), [0, 1, 2] * 3),
    ("contiguous copy", lambda x: x.T.reshape([6]), [0, 1, 2, 3, 4, 5]),
])
def test_lines_end_on_the_storage_cells(name, make, cells):
    t = make(_x())
    view = LayoutView(t, titles=[name])
    assert view.panels[0].offsets == cells == layout_of(t).offsets()
    ends = [int(tr.x[1]) for tr in _lines(view.figure())]
    assert ends == cells
    assert name in view.summary() and str(layout_of(t)) in view.summary()


def test_storage_row_shows_what_the_tensor_reads():
    view = LayoutView(_x()[:, 0:3:2])
    assert _storage_text(view.figure()) == [["0", "", "2", "3", "", "5"]]
    assert "cells read: 4 of 6" in view.summary()
    broadcast = LayoutView(_x()[0:1].expand([3, 3]))
    assert "stride 0" in broadcast.summary()


def test_several_panels_and_taichi():
    from tests.backend.conftest import _taichi

    Taichi = _taichi()
    x = _x(Taichi)
    view = LayoutView(x.T, x.T.reshape([6]), titles=["x.T", "copied"])
    fig = view.figure()
    assert [p.title for p in view.panels] == ["x.T", "copied"]
    assert fig.layout.annotations[0].text.startswith("x.T: shape [3, 2], strides [1, 3], offset 0")
    assert _storage_text(fig) == [["0", "1", "2", "3", "4", "5"], ["0", "3", "1", "4", "2", "5"]]


def test_refuses_big_tensors_and_mismatched_titles():
    big = Tensor[NdArray, 1].from_data(np.zeros(MAX_CELLS + 1, np.float32))
    with pytest.raises(ValueError, match="at most"):
        LayoutView(big)
    with pytest.raises(ValueError, match="titles"):
        LayoutView(_x(), titles=["a", "b"])
    with pytest.raises(TypeError):
        LayoutView()


def test_output_carries_a_static_png(real_png):
    view = LayoutView(_x().T, titles=["x.T"])
    bundle = view._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "image/png" in data and data["text/plain"] == view.summary()
    pixels = png_pixels(base64.b64decode(data["image/png"]))
    assert pixels.shape[0] > 100 and pixels.shape[1] > 300
