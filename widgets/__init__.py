"""Notebook widgets for burnbook, built on ipywidgets and plotly.

Installed as `burnbook.widgets`. `show_figure(fig, text)` displays a plain
plotly figure the way the widgets do (live in JupyterLab, with a static PNG
for readers without a kernel); `plot_curves(curves, title=...)` builds the
figure of a loss (or any value) against the step that a chapter also
prints. Each name is loaded on first use (PEP 562),
so `import burnbook.widgets` stays cheap and never pulls in plotly by itself.
The core never imports this package at module level; the Learner loads it only
inside a running notebook kernel.
"""

from __future__ import annotations

import importlib
from typing import Any

_WIDGETS = {
    "AttentionView": ".attention",
    "BackwardStepper": ".stepper",
    "GraphView": ".graph",
    "GradientView": ".gradient",
    "LayoutView": ".storage_view",
    "TensorView": ".tensor_view",
    "TrainingDashboard": ".dashboard",
    "show_figure": "._static",
    "plot_curves": ".curves",
}

__all__ = sorted(_WIDGETS)


def __getattr__(name: str) -> Any:
    module = _WIDGETS.get(name)
    if module is None:
        raise AttributeError(f"module 'burnbook.widgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
