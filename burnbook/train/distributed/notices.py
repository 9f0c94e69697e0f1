"""Ray's notice of a dead burnbook worker goes to burnbook's log, not to the screen.

When a worker process exits unexpectedly (SIGKILL, out of memory, a crash),
Ray's raylet publishes a notice and the driver's error listener prints it
to stdout: "(raylet) A worker died or was killed while executing a task by
an unexpected system error ...", in ANSI colour, with the lease, worker and
node ids, the worker's IP address, port and PID. The listener runs in every
driver whatever `ray.init(log_to_driver=...)` says, and no Ray setting or
environment variable turns it off (Ray 2.60: `listen_error_messages` in
`ray/_private/worker.py` calls `print_to_stdstream` for every notice).

For burnbook's own workers that notice repeats, in Ray's ids, what
burnbook already says in its own words: a worker that dies during `fit`
ends it with a `DistributedWorkerError` naming its rank, pid and host, and
a worker of the idle pool that died is replaced at the next `fit`. So
`route_worker_notices()` wraps the listener's `print_to_stdstream`: a
raylet notice whose every line names the PID of a worker this driver
started (`own(pid)`) is logged at DEBUG on the `burnbook.train` logger,
without its colour codes; every other notice (another program's workers,
Ray's own trouble) is printed as Ray prints it. Where Ray has no such
function (another Ray version), nothing changes and the notice shows.
"""

from __future__ import annotations

import logging
import re
from typing import Any

__all__ = ["own", "route_worker_notices"]

log = logging.getLogger("burnbook.train")

_PID = re.compile(r"\bWorker PID: (\d+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_OWN: set[int] = set()  # the PIDs of every worker process this driver started


def own(pids: Any) -> None:
    """Remember `pids` as worker processes started by this driver."""
    _OWN.update(int(pid) for pid in pids if pid is not None)


def _ours(line: str) -> bool:
    found = _PID.search(line)
    return found is not None and int(found.group(1)) in _OWN


def route_worker_notices(ray: Any) -> bool:
    """Install the wrapper (once per process); True when it is in place."""
    module = getattr(getattr(ray, "_private", None), "worker", None)
    printer = getattr(module, "print_to_stdstream", None)
    if printer is None:
        return False
    if getattr(printer, "burnbook_routed", False):
        return True

    def print_to_stdstream(data: dict, ignore_prefix: bool) -> None:
        lines = data.get("lines") or []
        if data.get("pid") == "raylet" and lines and all(_ours(str(line)) for line in lines):
            for line in lines:
                log.debug("Ray's notice of a burnbook worker (reported by DataParallel): %s",
                          _ANSI.sub("", str(line)))
            return None
        return printer(data, ignore_prefix)

    print_to_stdstream.burnbook_routed = True  # type: ignore[attr-defined]
    module.print_to_stdstream = print_to_stdstream
    return True
