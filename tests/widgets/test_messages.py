"""What a live dashboard costs a reader's link: the bytes of the widget
messages a real kernel sends while `fit` runs.

A Python kernel (jupyter_client, as JupyterLab starts one) runs two fits
in a row, each with a `TrainingDashboard` as a notebook shows it; a client
collects every iopub message, and the comm messages (the widgets' traffic to
the browser) are re-serialised with the kernel's own session to count their
bytes on the wire. The widgets' code plays no part in the count.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("ipykernel")
jupyter_client = pytest.importorskip("jupyter_client")

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 1_000_000   # bytes per fit after the first (issue 17)

SETUP = textwrap.dedent('''
    import sys, tempfile, time
    sys.path.insert(0, {root!r})
    from burnbook.backend import NdArray
    from burnbook.optim import AdamConfig
    from burnbook.train import AccuracyMetric, LearnerBuilder, LossMetric
    from burnbook.widgets import TrainingDashboard
    from tests.train.helpers import ShuffledLoader, batches, make_data, make_model

    X, Y = make_data(256, 1)
    XV, YV = make_data(64, 2)

    class Slow(ShuffledLoader):
        """~5 ms per batch more, so a fit lasts the seconds that throttled refreshes need."""
        def __iter__(self):
            for batch in super().__iter__():
                time.sleep(0.005)
                yield batch

    def fit(directory):
        b = (LearnerBuilder(directory).num_epochs(3)
             .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
             .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric()))
        dashboard = TrainingDashboard(interrupter=b.interrupter(), display=True, epoch_lines=False)
        b.renderer(dashboard).build(make_model(), AdamConfig().init(), 0.01).fit(
            Slow(X, Y, 4, seed=5), batches(XV, YV, 16, NdArray))
        return dashboard
''')


def _comm_bytes(client, session, reply_id: str, timeout: float = 120.0) -> tuple[int, int, dict]:
    """Bytes of comm messages on iopub until the request `reply_id` is idle,
    their number, and the messages of other kinds seen (by type)."""
    total, count, other = 0, 0, {}
    deadline = time.monotonic() + timeout
    while True:
        msg = client.get_iopub_msg(timeout=max(1.0, deadline - time.monotonic()))
        kind = msg["msg_type"]
        if kind in ("comm_open", "comm_msg", "comm_close"):
            total += sum(len(part) for part in session.serialize(msg)[1:])
            total += sum(len(memoryview(b).cast("B")) for b in msg.get("buffers") or ())
            count += 1
        else:
            other[kind] = other.get(kind, 0) + 1
        if kind == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        if (kind == "status" and msg["content"]["execution_state"] == "idle"
                and msg["parent_header"].get("msg_id") == reply_id):
            return total, count, other


def test_a_fit_after_the_first_sends_under_a_megabyte(tmp_path):
    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(ROOT), env={"TI_LOG_LEVEL": "warn", "PYTHONHASHSEED": "0",
                                           "BURNBOOK_STATIC_FIGURES": "0", **_base_env()})
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        session = client.session
        setup = client.execute(SETUP.format(root=str(ROOT)))
        _comm_bytes(client, session, setup)
        sent = []
        for _ in range(2):
            run = client.execute("board = fit(tempfile.mkdtemp())")
            sent.append(_comm_bytes(client, session, run))
        (first, first_n, _), (second, second_n, other) = sent
        # The dashboard did talk: widgets opened, many updates, the curves redrawn.
        assert first_n > 20 and second_n > 20 and other.get("display_data", 0) >= 1
        assert second < LIMIT, f"the second fit sent {second:,} bytes of widget messages ({second_n} messages)"
        assert first < LIMIT, f"the first fit sent {first:,} bytes of widget messages ({first_n} messages)"
        print(f"widget messages per fit: {first:,} B ({first_n}), then {second:,} B ({second_n})")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _base_env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "BURNBOOK_DATA", "PYTHONPATH", "LANG")}
