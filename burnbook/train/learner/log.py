"""`experiment.log`: the text log of a run (Burn installs a tracing file
logger there). The Learner's messages go to the `burnbook.train` logger;
during `fit` a file handler appends them to `<artifact_dir>/experiment.log`
(a resumed run appends to the same file). Appending line by line is the one
non-atomic write of the artifact folder, on purpose: a log is read as a
stream, and a crash leaves every complete line in place.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Iterator

__all__ = ["experiment_log", "LOGGER_NAME"]

LOGGER_NAME = "burnbook.train"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@contextlib.contextmanager
def experiment_log(path: Path, enabled: bool = True) -> Iterator[logging.Logger]:
    """Attach a file handler for `path` to the `burnbook.train` logger
    while the block runs (INFO and above)."""
    logger = logging.getLogger(LOGGER_NAME)
    if not enabled:
        yield logger
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(FORMAT))
    level = logger.level
    if level == logging.NOTSET or level > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(level)
