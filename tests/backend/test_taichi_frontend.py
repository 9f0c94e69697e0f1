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
