"""burnbook/_malloc.py: NumPy's temporaries reuse freed heap memory instead
of being faulted in afresh on every allocation (glibc only)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from burnbook import _malloc


def _glibc() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return hasattr(ctypes.CDLL(None), "gnu_get_libc_version")
    except OSError:
        return False


# A forward pass's pattern: several arrays of a few MiB live at once, all
# freed, then again. After a warm-up, print the page faults that cost and
# the allocator's state.
_PROBE = """
import resource, numpy as np
import burnbook.backend  # `import burnbook` sets the allocator up
from burnbook import _malloc
def churn(rounds):
    for _ in range(rounds):
        live = [np.empty(3 << 19, np.float32) for _ in range(4)]   # 4 x 6 MiB
        for a in live:
            a.fill(1.0)
        del live, a
churn(5)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
churn(50)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(_malloc.state())
"""


def _probe(**env: str) -> tuple[int, str]:
    run = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env})
    assert run.returncode == 0, run.stderr
    faults, state = run.stdout.strip().splitlines()[-2:]
    return int(faults), state


@pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's (mallopt); elsewhere nothing is changed")
def test_freed_arrays_are_reused_without_page_faults():
    faults, state = _probe(BURNBOOK_MALLOC="")
    assert state.startswith("glibc") and "32 MiB" in state, state
    # 50 rounds of 6,144 pages each: reused memory faults (almost) none of them.
    assert faults < 500, f"{faults} page faults for 50 rounds of reused arrays ({state})"


@pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's (mallopt); elsewhere nothing is changed")
def test_opting_out_leaves_glibc_defaults_which_fault_every_time():
    faults, state = _probe(BURNBOOK_MALLOC="system")
    assert state == "system default (BURNBOOK_MALLOC=system)"
    # glibc's defaults give the freed 24 MiB back to the OS (more than twice
    # its adapted 6 MiB mmap threshold), so each round faults most pages again.
    assert faults > 50 * 2000, f"only {faults} page faults with glibc's defaults"


def test_an_unknown_setting_is_an_error_naming_the_variable():
    run = subprocess.run([sys.executable, "-c", "import burnbook"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "BURNBOOK_MALLOC": "sytem"})
    assert run.returncode != 0
    assert "BURNBOOK_MALLOC='sytem': expected keep or system" in run.stderr


def test_state_names_what_was_done():
    assert _malloc.state().startswith(("glibc", "system default"))
    assert _malloc.keep_freed_memory() is _malloc.state().startswith("glibc")
