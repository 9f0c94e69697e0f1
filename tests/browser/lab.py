"""A JupyterLab server and Debian's Chromium for the browser tests.

`jupyter_lab(root, home)` starts JupyterLab on a free loopback port with a
generated token and its own config, data and runtime folders under `home`
(so nothing is trusted, nothing is remembered), serving `root`. Playwright
drives `/usr/bin/chromium` (never a downloaded browser).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyter_lab(root: Path, home: Path, start_s: float) -> Iterator[dict]:
    """A JupyterLab server serving `root`: yields {"url", "token", "home"};
    its log is `home/server.log`. Fails when it does not answer in `start_s`."""
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        (home / sub).mkdir(exist_ok=True)
        env[var] = str(home / sub)
    # Every cell stays in the DOM (no windowing), the notebook's kernel starts
    # without a "Select Kernel" dialog (accepting one mid-run swaps the kernel
    # and aborts the queued cells), and no news pop-up.
    settings = home / "config" / "lab" / "user-settings" / "@jupyterlab"
    for plugin, values in (("notebook-extension/tracker", {"windowingMode": "none", "autoStartDefaultKernel": True}),
                           ("apputils-extension/notification", {"fetchNews": "false"})):
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")
    env.setdefault("TI_LOG_LEVEL", "warn")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    log = (home / "server.log").open("w")
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}", "--ServerApp.terminals_enabled=False",
               "--LabApp.news_url=", "--LabApp.extension_manager=readonly",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")   # containers and CI often run as root
    server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_s
        while True:
            if server.poll() is not None:
                raise AssertionError(f"JupyterLab exited with {server.returncode}:\n"
                                     f"{(home / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"JupyterLab did not answer within {start_s} s")
            time.sleep(0.5)
        yield {"url": url, "token": token, "home": home}
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def kernel_ids(lab: dict) -> list[str]:
    """The ids of the kernels the server runs ([] while it cannot say)."""
    try:
        with urllib.request.urlopen(f"{lab['url']}/api/kernels?token={lab['token']}", timeout=5) as reply:
            return sorted(k["id"] for k in json.loads(reply.read()))
    except OSError:   # a 500 while the server switches kernels
        return []


def shut_down_kernels(lab: dict) -> None:
    """Stop every kernel the server runs (a checked notebook's, to free the CPU)."""
    for kid in kernel_ids(lab):
        request = urllib.request.Request(f"{lab['url']}/api/kernels/{kid}?token={lab['token']}", method="DELETE")
        with contextlib.suppress(OSError):
            urllib.request.urlopen(request, timeout=10).close()
