"""nbval settings for the book that a sanitize file cannot express.

`burnbook.widgets.show_figure` stores a figure's live plotly output
(`application/vnd.plotly.v1+json`), whose arrays are float32 values to the
last bit: they differ from CPU to CPU, and a sanitizer (a regex over text)
cannot reach a JSON object. nbval compares neither that output nor the
figure's PNG (`image/png`, skipped by nbval itself); the numbers a figure
shows are checked in the text the chapter prints beside it.
"""

from __future__ import annotations

PLOTLY_MIME = "application/vnd.plotly.v1+json"


def pytest_collection_modifyitems(session, config, items) -> None:
    for item in items:
        notebook = getattr(item, "parent", None)
        skip = getattr(notebook, "skip_compare", None)
        if isinstance(skip, tuple) and PLOTLY_MIME not in skip:
            notebook.skip_compare = skip + (PLOTLY_MIME,)
