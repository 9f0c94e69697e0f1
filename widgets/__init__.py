"""Notebook widgets for burnbook (ipywidgets + plotly), imported lazily.

Installed as `burnbook.widgets`. The core never imports this package at module
level; the Learner loads it only inside a running notebook kernel.
"""

__all__: list[str] = []
