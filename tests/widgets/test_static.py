"""The static side of every figure: what a notebook shows without a kernel.

`show_figure` and the views store a PNG (drawn by kaleido in Chromium) next
to the live figure and its text; where no browser can draw it, the output
keeps the live figure and the text; and no stored chapter loads a script.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

import plotly.graph_objects as go  # noqa: E402

from burnbook.widgets import _image, _static, show_figure  # noqa: E402

from .pngs import png_facts, png_pixels  # noqa: E402

BOOK = Path(__file__).resolve().parents[2] / "notebooks"


def figure() -> go.Figure:
    x = np.linspace(0.0, 1.0, 50)
    return go.Figure(go.Scatter(x=x, y=x ** 2, mode="lines", line={"color": "#d62728", "width": 4}),
                     layout={**_static.LAYOUT, "title": {"text": "a parabola"}, "height": 300})


def test_show_figure_displays_the_live_figure_its_png_and_text(real_png, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append((a, k)))
    show_figure(figure(), "y = x^2 on [0, 1]")
    ((data,), options), = shown
    assert options["raw"] is True
    assert set(data) == {"application/vnd.plotly.v1+json", "image/png", "text/plain"}
    assert data["text/plain"] == "y = x^2 on [0, 1]"
    assert data["application/vnd.plotly.v1+json"]["data"][0]["type"] == "scatter"
    # plotly's toolbar is trimmed (JupyterLab passes the config to plotly.js)
    assert data["application/vnd.plotly.v1+json"]["config"] == _static.PLOTLY_CONFIG
    assert _static.PLOTLY_CONFIG["displaylogo"] is False
    assert _static.PLOTLY_CONFIG["showSendToCloud"] is False   # no button that uploads the figure
    assert options["metadata"] == {"image/png": {"width": 900, "height": 300}}
    png = base64.b64decode(data["image/png"])
    width, height, ink = png_facts(png)
    assert (width, height) == (900, 300) and ink > 0.01
    # The curve is drawn: the red of its line is in the image.
    rgb = png_pixels(png)[..., :3].astype(int)
    red = (rgb[..., 0] > 180) & (rgb[..., 1] < 90) & (rgb[..., 2] < 90)
    assert red.sum() > 500


def test_without_a_renderer_the_output_keeps_the_live_figure_and_text(monkeypatch):
    renderer = _image._Renderer()
    monkeypatch.setenv(_image.DISABLE_VAR, "0")
    assert renderer.png({"data": [], "layout": {}}, 100, 100) is None
    assert renderer.reason == f"{_image.DISABLE_VAR}=0"
    data, metadata = _static.figure_bundle(figure())   # figure_png is patched to None here (conftest)
    assert set(data) == {"application/vnd.plotly.v1+json", "text/plain"} and metadata == {}
    assert data["text/plain"] == "<figure: a parabola>"
    with pytest.raises(TypeError, match="expected a plotly.graph_objects.Figure, got dict"):
        show_figure({"data": []})


def test_no_stored_output_loads_a_script_or_a_cdn():
    offenders = []
    for path in sorted(BOOK.rglob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for k, cell in enumerate(nb["cells"]):
            for out in cell.get("outputs", []):
                text = json.dumps(out.get("data", {}))
                if "cdn.plot.ly" in text or "<script" in text:
                    offenders.append(f"{path.relative_to(BOOK)} cell {k}")
    assert not offenders, f"outputs that load a script: {offenders}"
