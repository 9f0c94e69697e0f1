"""Untimed training steps before a training-step case is timed.

Adam's (and AdamW's) second step is the first of its steady state: its
moment buffers exist from then on, so Autodiff[Fusion[Taichi]] records a new
graph and builds kernels for it (about a second on this machine). The
harness warms a slow case up with a single call, so without these steps it
would time that second step as the first sample (the guide CNN's Fusion rows
once read "27.7 ms - 1.78 s, IQR 5684 %, noisy"). Every framework takes the
same untimed steps, and the probes read the initial weights, kept aside, so
the check is unchanged.
"""

from __future__ import annotations

SETUP_STEPS = 2


def settle(fw, step) -> None:
    """`SETUP_STEPS` calls of `step`, synced; the harness runs a setup inside
    the framework's thread settings (`fw.enter()`)."""
    for _ in range(SETUP_STEPS):
        step()
    fw.sync()
