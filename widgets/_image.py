"""Static PNG images of plotly figures, drawn by kaleido in a headless Chromium.

A notebook output that carries a PNG shows its figure without a kernel, a
trusted notebook or a network: in a freshly cloned notebook in JupyterLab
(PNG is a "safe" output there, SVG is not), on GitHub, in nbviewer and in
nbconvert's HTML. kaleido 1.x draws the figure with the plotly.js that the
plotly package ships (no CDN; MathJax is turned off) in a Chromium it finds
through choreographer: `BROWSER_PATH` when set, else `chromium`, `chrome`...
on PATH (Debian's /usr/bin/chromium, `make browser-deps`).

One browser per process is started at the first figure (a few seconds) and
reused (a few hundred ms per figure); it is closed when Python exits. Where
kaleido or a browser is missing, or a render fails or times out, `figure_png`
returns None and the output keeps its live figure and its text only; the
reason is in `unavailable_reason()`. `BURNBOOK_STATIC_FIGURES=0` turns
rendering off.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
from typing import Any

__all__ = ["figure_png", "unavailable_reason", "STATIC_WIDTH", "DISABLE_VAR"]

DISABLE_VAR = "BURNBOOK_STATIC_FIGURES"
STATIC_WIDTH = 900        # CSS pixels, when the figure sets no width
SCALE = 1.0               # one device pixel per CSS pixel: keeps notebooks small (figures are live once run)
START_TIMEOUT_S = 90.0    # the browser's first start (slow on a loaded CI machine)
RENDER_TIMEOUT_S = 60.0

_log = logging.getLogger("burnbook.widgets")


class _Renderer:
    """A kaleido instance on its own thread and event loop, so a render is a
    blocking call with a timeout (kaleido's own sync server waits forever
    when its browser fails to start)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kaleido: Any = None
        self.reason: str | None = None   # why rendering is off, once it is

    def _start(self) -> None:
        if os.environ.get(DISABLE_VAR, "1").strip().lower() in ("0", "false", "no", "off"):
            raise _Unavailable(f"{DISABLE_VAR}={os.environ[DISABLE_VAR]}")
        try:
            import kaleido
            from choreographer.browsers.chromium import Chromium
        except ImportError as err:
            raise _Unavailable(f"kaleido is not installed ({err.name}): pip install kaleido") from err
        if Chromium.find_browser(skip_local=False) is None:
            raise _Unavailable("no Chromium or Chrome found (set BROWSER_PATH, or install chromium)")
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="burnbook-kaleido", daemon=True).start()
        self._loop = loop
        k = kaleido.Kaleido(n=1, timeout=RENDER_TIMEOUT_S, mathjax=False)
        self._call(k.open(), START_TIMEOUT_S)
        self._kaleido = k
        atexit.register(self.close)

    def _call(self, coroutine: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def png(self, figure: dict, width: int, height: int) -> bytes | None:
        with self._lock:
            if self.reason is not None:
                return None
            try:
                if self._kaleido is None:
                    self._start()
                opts = {"format": "png", "width": width, "height": height, "scale": SCALE}
                return self._call(self._kaleido.calc_fig(figure, opts=opts), RENDER_TIMEOUT_S)
            except Exception as err:  # noqa: BLE001 - any failure leaves the figure without a PNG
                # A failed or hung browser is not retried figure after figure.
                self.reason = str(err) if isinstance(err, _Unavailable) else f"{type(err).__name__}: {err}"
                _log.info("burnbook.widgets: figures get no static image: %s", self.reason)
                self._stop_loop()
                return None

    def close(self) -> None:
        if self._kaleido is not None:
            try:
                self._call(self._kaleido.close(), 10)
            except Exception:  # noqa: BLE001 - closing at exit: nothing left to report to
                pass
            self._kaleido = None
        self._stop_loop()

    def _stop_loop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop = None


class _Unavailable(RuntimeError):
    """Static rendering cannot run here (no kaleido, no browser, turned off)."""


_RENDERER = _Renderer()


def figure_png(figure: Any) -> tuple[bytes, int, int] | None:
    """`figure` (a plotly Figure or its dict) as PNG bytes with its width
    and height in CSS pixels, or None where no image can be made here."""
    spec = figure.to_plotly_json() if hasattr(figure, "to_plotly_json") else dict(figure)
    layout = spec.get("layout") or {}
    width = int(layout.get("width") or STATIC_WIDTH)
    height = int(layout.get("height") or 450)
    png = _RENDERER.png(spec, width, height)
    return None if png is None else (png, width, height)


def unavailable_reason() -> str | None:
    """Why figures get no static image in this process (None: they do, or
    none was tried yet)."""
    return _RENDERER.reason
