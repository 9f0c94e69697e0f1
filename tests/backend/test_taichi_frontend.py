"""The memos around Taichi's Python front end (burnbook/backend/taichi/frontend.py):
installed with the runtime on the Taichi they were written for, results and
error messages the same as Taichi's own, an edited source file read again,
and any other Taichi version left alone."""

from __future__ import annotations

import importlib.util
import linecache
import os
import sys

import numpy as np
import pytest

from burnbook.backend.taichi import frontend

_MODULE = '''
import taichi as ti


@ti.func
def scaled(x, k: ti.template()):
    return x * k + {offset}


@ti.kernel
def fill(out: ti.types.ndarray()):
    for i in range(out.shape[0]):
        out[i] = scaled(scaled(ti.cast(i, ti.f32), 2.0), 3.0)


@ti.func
def broken(x):
    return x + missing_name


@ti.kernel
def first(out: ti.types.ndarray()):
    for i in range(out.shape[0]):
        out[i] = broken(ti.cast(i, ti.f32))

'''


@pytest.fixture(scope="module")
def taichi_runtime():
    from burnbook.backend.taichi import Taichi

    Taichi.float_from_data(np.zeros(1, np.float32), Taichi.default_device())
    assert frontend.installed(), "starting the runtime installs the memos on Taichi 1.7.4"


def _load(path, offset: float, name: str):
    path.write_text(_MODULE.format(offset=offset))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _error(kernel) -> str:
    import taichi as ti

    with pytest.raises(Exception) as info:
        kernel(ti.ndarray(ti.f32, (4,)))
    return str(info.value)


def test_kernels_built_through_the_memos_compute_as_written(taichi_runtime, tmp_path):
    import taichi as ti

    module = _load(tmp_path / "frontend_fill.py", 1.0, "frontend_fill")
    out = ti.ndarray(ti.f32, (5,))
    module.fill(out)
    i = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(out.to_numpy(), ((i * 2 + 1) * 3 + 1))


def test_error_messages_are_taichis_own(taichi_runtime, tmp_path):
    """A kernel inlining a faulty `ti.func`, built through the memos and then
    without them (a failed build is tried again at the next call): the same
    message, positions, source lines and carets included."""
    module = _load(tmp_path / "frontend_broken.py", 0.0, "frontend_broken")
    memoised = _error(module.first)
    frontend.uninstall()
    try:
        plain = _error(module.first)
    finally:
        frontend.install()
    assert "missing_name" in plain and "^" in plain and "frontend_broken.py" in plain, plain
    assert memoised == plain


def test_an_edited_source_file_is_read_again(taichi_runtime, tmp_path):
    from taichi.lang import kernel_impl

    path = tmp_path / "frontend_edit.py"
    module = _load(path, 1.0, "frontend_edit")
    lines, start = kernel_impl.getsourcelines(module.scaled)
    assert any("+ 1.0" in line for line in lines)
    assert kernel_impl.getsourcelines(module.broken)[0][1] == "def broken(x):\n"   # each function its own
    lines.append("changed by the caller\n")   # a copy: the memo keeps its own
    assert kernel_impl.getsourcelines(module.scaled) == (lines[:-1], start)

    path.write_text(_MODULE.format(offset=7.5))
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    linecache.clearcache()   # what Taichi's own reader sees next: the edited file
    lines, _ = kernel_impl.getsourcelines(module.scaled)
    assert any("+ 7.5" in line for line in lines), lines


def test_another_taichi_version_keeps_its_own_front_end(taichi_runtime, monkeypatch):
    import taichi
    from taichi.lang import kernel_impl
    from taichi.lang.ast import ast_transformer_utils

    frontend.uninstall()
    try:
        own = (kernel_impl.getsourcelines, ast_transformer_utils.ASTTransformerContext.get_pos_info)
        monkeypatch.setattr(taichi, "__version__", (1, 8, 0))
        assert frontend.install() is False
        assert not frontend.installed()
        assert (kernel_impl.getsourcelines, ast_transformer_utils.ASTTransformerContext.get_pos_info) == own
    finally:
        monkeypatch.undo()
        assert frontend.install() is True
    assert kernel_impl.getsourcelines is not own[0]


def test_each_source_is_read_and_each_position_drawn_once(taichi_runtime, tmp_path, monkeypatch):
    """What the memos are for: a second request with the same inputs does not
    reach Taichi's own reader or message builder; a changed source line does."""
    import ast
    import types

    from taichi.lang import kernel_impl
    from taichi.lang.ast import ast_transformer_utils

    calls = {"getsourcelines": 0, "get_pos_info": 0}

    def counted(name):
        original = frontend._originals[name]

        def call(*args):
            calls[name] += 1
            return original(*args)
        return call

    for name in calls:
        monkeypatch.setitem(frontend._originals, name, counted(name))
    module = _load(tmp_path / "frontend_count.py", 2.0, "frontend_count")
    first = kernel_impl.getsourcelines(module.scaled)
    assert kernel_impl.getsourcelines(module.scaled) == first and calls["getsourcelines"] == 1

    def fake(src):   # the context fields Taichi's message builder reads
        return types.SimpleNamespace(file=str(tmp_path / "made_up.py"), lineno_offset=40, indent=4, src=[src],
                                     func=types.SimpleNamespace(func=test_each_source_is_read_and_each_position_drawn_once))

    position = ast_transformer_utils.ASTTransformerContext.get_pos_info
    node = ast.parse("y = x * 2").body[0]
    message = position(fake("    y = x * 2"), node)
    assert position(fake("    y = x * 2"), node) == message and calls["get_pos_info"] == 1
    assert "line 41" in message and "^" in message, message
    assert position(fake("    y = x * 3"), node) != message and calls["get_pos_info"] == 2


def test_the_environment_chooses_the_front_end(monkeypatch):
    monkeypatch.delenv(frontend.ENV, raising=False)
    assert frontend.chosen()
    for value, memo in (("memo", True), (" Taichi ", False), ("", True)):
        monkeypatch.setenv(frontend.ENV, value)
        assert frontend.chosen() is memo, value
    monkeypatch.setenv(frontend.ENV, "fast")
    with pytest.raises(ValueError, match="BURNBOOK_TAICHI_FRONTEND='fast': expected 'memo'.*or 'taichi'"):
        frontend.chosen()


def test_a_process_asking_for_taichis_front_end_runs_without_the_memos():
    import subprocess

    code = ("import numpy as np\n"
            "from burnbook.backend.taichi import Taichi, frontend\n"
            "x = Taichi.float_from_data(np.arange(3, dtype=np.float32), Taichi.default_device())\n"
            "print(frontend.installed(), Taichi.float_into_data(Taichi.float_exp(x)).tolist()[0])\n")
    env = dict(os.environ, **{frontend.ENV: "taichi"})
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-2:] == ["False", "1.0"], proc.stdout
