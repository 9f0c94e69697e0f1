"""Renderers: how a training run is shown while it goes (Burn's
`burn_train::renderer`). `default_renderer` picks one automatically: the
notebook dashboard (or its plain-text fallback) inside a Jupyter kernel, the
terminal progress bars everywhere else."""

from __future__ import annotations

from typing import Any

from .base import MetricsRenderer, MetricsRendererBase, MetricState, TrainingProgress
from .cli import CliMetricsRenderer
from .notebook import NotebookTextRenderer, in_notebook, notebook_renderer

__all__ = [
    "MetricsRenderer", "MetricsRendererBase", "MetricState", "TrainingProgress", "CliMetricsRenderer",
    "NotebookTextRenderer", "in_notebook", "notebook_renderer", "default_renderer",
]


def default_renderer(interrupter: Any = None, checkpoint: int | None = None) -> Any:
    """The renderer for where this code runs (see the module docstring)."""
    if in_notebook():
        return notebook_renderer(interrupter, checkpoint)
    return CliMetricsRenderer()
