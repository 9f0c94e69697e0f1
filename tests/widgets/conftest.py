"""Views draw their static PNG in a headless Chromium (seconds to start):
only the tests that ask for the `real_png` fixture do; the others see what a
machine without a browser produces (no image/png)."""

from __future__ import annotations

import pytest


@pytest.fixture
def real_png():
    """Static images are drawn for real (skips where no browser can draw them)."""
    from burnbook.widgets import _image

    drawn = _image.figure_png({"data": [], "layout": {"width": 20, "height": 20}})
    if drawn is None:
        pytest.skip(f"no static figure renderer here: {_image.unavailable_reason()}")
    return _image


@pytest.fixture(autouse=True)
def _no_static_images(request, monkeypatch):
    if "real_png" not in request.fixturenames:
        monkeypatch.setattr("burnbook.widgets._static.figure_png", lambda fig: None)
