"""The Taichi runtime package: the runtime object, the settings object and its
`override`, and the public-API launch path (`BURNBOOK_TAICHI_LAUNCH=public`)
giving the same results as the fast path."""

from __future__ import annotations

import numpy as np
import pytest
import taichi as ti

from burnbook.backend.ndarray import NdArray as N
from burnbook.backend.taichi import SETTINGS, KernelSettings, Taichi as T, launcher, runtime
from burnbook.backend.taichi import kernel_stats, running_device

DEV = T.default_device()  # BURNBOOK_TAICHI_ARCH's (cpu by default)
SPIRV = DEV.kind in ("vulkan", "metal")


def _program(B, device) -> list:
    """A few ops of every kernel family; the host arrays they give."""
    rng = np.random.default_rng(7)
    x = B.float_from_data(rng.standard_normal((33, 65)).astype(np.float32), device)
    w = B.float_from_data(rng.standard_normal((65, 9)).astype(np.float32), device)
    idx = B.int_from_data(rng.integers(0, 65, (33, 4)), device)
    y = B.float_exp(B.float_mul_scalar(B.float_permute(x, (1, 0)), 0.1))
    return [B.float_into_data(r) for r in (
        y, B.float_sum_dim(x, 1), B.float_matmul(x, w), B.float_gather(1, x, idx),
        B.float_scatter(1, x, idx, B.float_full((33, 4), 1.0, device)),
        B.float_mask_fill(x, B.float_greater_elem(x, 0.5), -1.0), B.float_argmax(x, 0))]


def test_the_runtime_is_an_object_holding_device_dtypes_and_settings() -> None:
    T.float_from_data(np.zeros(1, np.float32), DEV)
    rt = runtime.current
    assert isinstance(rt, runtime.TaichiRuntime) and rt.device == DEV == running_device()
    assert rt.settings is SETTINGS and rt.spirv == SPIRV and rt.has_f64 == (DEV.kind != "metal")
    assert rt.ti_dtype[np.dtype(np.float32)] is ti.f32 and rt.ti_dtype[np.dtype(np.bool_)] is ti.u8
    # LLVM archs sum f32 in f64; SPIR-V ones in compensated f32 (no f64 math in f32 kernels)
    assert rt.accumulator[np.dtype(np.float32)] is (ti.f32 if SPIRV else ti.f64)
    assert runtime.start(DEV) is rt  # asking again gives the same runtime


def test_override_sets_and_restores_even_after_an_error() -> None:
    before = SETTINGS.serial_below, SETTINGS.block
    with SETTINGS.override(serial_below=0, block=7) as s:
        assert s is SETTINGS and (SETTINGS.serial_below, SETTINGS.block) == (0, 7)
    assert (SETTINGS.serial_below, SETTINGS.block) == before
    with pytest.raises(ZeroDivisionError), SETTINGS.override(block=3):
        1 / 0
    assert SETTINGS.block == before[1]


def test_override_refuses_unknown_names_facts_of_the_arch_and_bad_choices() -> None:
    with pytest.raises(TypeError, match="'tile' is not a setting.*serial_below"):
        with SETTINGS.override(tile=4):
            pass
    with pytest.raises(TypeError, match="'spirv' is not a setting"):
        with SETTINGS.override(spirv=True):
            pass
    with pytest.raises(ValueError, match="launch='quick', expected one of fast, public"):
        with SETTINGS.override(launch="quick"):
            pass
    with pytest.raises(ValueError, match="lanes=4, expected one of 0, 8"):
        with SETTINGS.override(lanes=4):
            pass


def test_environment_knobs_are_read_and_checked(monkeypatch) -> None:
    s = KernelSettings()
    monkeypatch.setenv("BURNBOOK_TAICHI_LAUNCH", "public")
    monkeypatch.setenv("BURNBOOK_TAICHI_MATMUL", "kernel")
    monkeypatch.setenv("BURNBOOK_TAICHI_POOL_MB", "8")
    s.start("cpu")
    assert (s.launch, s.matmul, s.columns, s.pool_mb, s.serial_below, s.gpu) == \
        ("public", "kernel", "host", 8.0, 16384, False)
    monkeypatch.setenv("BURNBOOK_TAICHI_COLUMNS", "kernel")
    s.start("cpu")
    assert s.columns == "kernel"
    monkeypatch.setenv("BURNBOOK_TAICHI_COLUMNS", "host")
    s.start("vulkan")
    assert (s.matmul, s.columns, s.block, s.serial_below, s.gpu, s.spirv) == ("kernel", "kernel", 1, 0, True, True)
    with pytest.raises(ValueError, match="columns='host' needs the CPU arch"):
        with s.override(columns="host"):
            pass
    monkeypatch.setenv("BURNBOOK_TAICHI_COLUMNS", "numpy")
    with pytest.raises(ValueError, match="BURNBOOK_TAICHI_COLUMNS='numpy'"):
        s.start("cpu")
    monkeypatch.setenv("BURNBOOK_TAICHI_COLUMNS", "host")
    monkeypatch.setenv("BURNBOOK_TAICHI_LAUNCH", "quick")
    with pytest.raises(ValueError, match="BURNBOOK_TAICHI_LAUNCH='quick'"):
        s.start("cpu")
    monkeypatch.setenv("BURNBOOK_TAICHI_LAUNCH", "fast")
    monkeypatch.setenv("BURNBOOK_TAICHI_POOL_MB", "lots")
    with pytest.raises(ValueError, match="BURNBOOK_TAICHI_POOL_MB='lots'"):
        s.start("cpu")
    monkeypatch.setenv("BURNBOOK_TAICHI_POOL_MB", "8")
    monkeypatch.setenv("BURNBOOK_TAICHI_LANES", "0")
    s.start("cpu")
    assert s.lanes == 0
    monkeypatch.setenv("BURNBOOK_TAICHI_LANES", "8")
    s.start("cpu")
    assert s.lanes == 8
    s.start("cuda")
    assert s.lanes == 0
    with pytest.raises(ValueError, match="lanes=8 needs the CPU arch"):
        with s.override(lanes=8):
            pass
    monkeypatch.setenv("BURNBOOK_TAICHI_LANES", "4")
    with pytest.raises(ValueError, match="BURNBOOK_TAICHI_LANES='4'"):
        s.start("cpu")


def test_public_launches_give_the_fast_paths_results_through_taichis_own_api(monkeypatch) -> None:
    T.float_from_data(np.zeros(1, np.float32), DEV)
    fast = _program(T, DEV)

    def internals(*_):
        raise AssertionError("the public path reached Taichi's internals")

    with SETTINGS.override(launch="public"), monkeypatch.context() as m:
        m.setattr(launcher, "program", internals)
        n0 = kernel_stats()["launches"]
        buf = launcher.buffer(ti.f32, 5)
        assert type(buf) is not launcher.Buffer and isinstance(buf, ti.Ndarray)  # a plain ti.ndarray
        public = _program(T, DEV)
        assert kernel_stats()["launches"] > n0
    reference = _program(N, N.default_device())
    for f, p, r in zip(fast, public, reference):
        np.testing.assert_array_equal(f, p)  # same kernels, same process: the same bits
        np.testing.assert_allclose(p, r, rtol=1e-5, atol=1e-5)


def test_tensors_cross_between_the_two_launch_paths() -> None:
    a = T.float_from_data(np.arange(6, dtype=np.float32), DEV)
    with SETTINGS.override(launch="public"):
        b = T.float_add_scalar(a, 1.0)  # a pooled buffer read by a public launch
    c = T.float_mul(a, b)  # a plain ti.ndarray read by a fast launch
    np.testing.assert_array_equal(T.float_into_data(c), np.arange(6) * (np.arange(6) + 1))


def test_a_stale_offline_cache_lock_is_removed_and_a_live_one_kept(tmp_path, monkeypatch) -> None:
    """A lock file left by a killed process would make every later process
    warn on stderr (inside notebook cells too) until `ti cache clean`."""
    import os
    import time

    monkeypatch.setattr(launcher, "offline_cache_folder", lambda: str(tmp_path))
    lock = tmp_path / "ticache.lock"
    lock.touch()
    runtime._drop_stale_cache_lock()
    assert lock.exists(), "a lock taken just now belongs to a live process"
    old = time.time() - runtime.STALE_LOCK_S - 5
    os.utime(lock, (old, old))
    runtime._drop_stale_cache_lock()
    assert not lock.exists()
    runtime._drop_stale_cache_lock()  # nothing to remove: no error


def test_a_fresh_process_clears_a_stale_lock_before_its_first_kernel(tmp_path) -> None:
    import os
    import subprocess
    import sys
    import time

    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"))
    for name in ("TI_LOG_LEVEL", "TI_OFFLINE_CACHE_FILE_PATH", "TI_REPO_DIR"):  # the cache goes under HOME
        env.pop(name, None)
    code = ("import taichi as ti\nfrom taichi.lang import impl\nti.init(arch=ti.cpu, log_level=ti.ERROR)\n"
            "print(impl.current_cfg().offline_cache_file_path)\n")
    folder = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            check=True).stdout.strip().splitlines()[-1]
    assert folder.startswith(str(tmp_path)), folder
    os.makedirs(folder, exist_ok=True)
    lock = os.path.join(folder, "ticache.lock")
    open(lock, "w").close()
    old = time.time() - 3600
    os.utime(lock, (old, old))
    script = ("from burnbook import Tensor\nfrom burnbook.backend import Taichi\n"
              "x = Tensor[Taichi, 1].from_floats([1.0, 2.0])\nprint((x * x).to_numpy())\n")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Lock" not in proc.stderr, proc.stderr[-2000:]
    assert not os.path.exists(lock)


@pytest.mark.parametrize("knob", ["columns", "reduce", "copy"])
def test_each_host_knob_is_read_and_host_only(monkeypatch, knob) -> None:
    """The CPU arch's NumPy paths ("host") are the default there, each can be
    turned off by its environment variable, a GPU arch never takes them, and
    a wrong value names the variable."""
    s, env = KernelSettings(), f"BURNBOOK_TAICHI_{knob.upper()}"
    s.start("cpu")
    assert getattr(s, knob) == "host"
    monkeypatch.setenv(env, "kernel")
    s.start("cpu")
    assert getattr(s, knob) == "kernel"
    monkeypatch.setenv(env, "host")
    s.start("vulkan")
    assert getattr(s, knob) == "kernel"
    with pytest.raises(ValueError, match=f"{knob}='host' needs the CPU arch"):
        with s.override(**{knob: "host"}):
            pass
    monkeypatch.setenv(env, "memcpy")
    with pytest.raises(ValueError, match=f"{env}='memcpy'"):
        s.start("cpu")
