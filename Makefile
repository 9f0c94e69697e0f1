# burnbook: `make lab` opens the book, `make test` checks everything, `make bench` measures.
# Every target installs what it needs into .venv first, so a fresh clone needs nothing else.

# A Python that Taichi 1.7.4 has wheels for (3.10-3.13): python3 when it is one,
# else the newest python3.13 ... python3.10 on PATH (tools/pick_python.sh).
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell sh tools/pick_python.sh)
endif
SUPPORTED_PYTHON = burnbook needs Python 3.10 to 3.13 (Taichi 1.7.4 publishes wheels for those only)
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# An editable install of burnbook, quiet under -q: setuptools' editable
# backend (a meta path finder: kernels/ and widgets/ install as
# burnbook.kernels and burnbook.widgets) always warns "Editable installation.
# Please be careful with folders in your working directory...", and pip 26
# shows a backend's warnings. Python's own filter for that one message, as
# setuptools' warnings module intends (its compat and strict modes would not
# map those folders, or would miss new files).
PIP_EDITABLE = PYTHONWARNINGS="$${PYTHONWARNINGS:+$$PYTHONWARNINGS,}ignore:Editable installation." $(PIP) install -q -e

# Offline machines (CI included) read MNIST from a data folder; ../shared/data when it exists.
SHARED_DATA := $(abspath $(wildcard ../shared/data))
export BURNBOOK_DATA ?= $(SHARED_DATA)
export TI_LOG_LEVEL ?= warn
export PYTHONHASHSEED := 0

.PHONY: which-python lab site test test-python binder-build test-vulkan test-public test-gpu test-browser test-notebooks test-notebooks-zh bench install install-test browser-deps vulkan-deps clean

$(VENV)/bin/python:
	@test -n "$(PYTHON)" || { echo "$(SUPPORTED_PYTHON); python3 here is $$(python3 --version 2>&1 || echo missing). Install one (apt install python3.12, brew install python@3.12, uv python install 3.12) and run make again, or name it: make $(or $(MAKECMDGOALS),lab) PYTHON=python3.12" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 13))' || { echo "$(SUPPORTED_PYTHON); PYTHON=$(PYTHON) is $$($(PYTHON) --version 2>&1)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# What a reader needs: the package with its notebook extras, and the
# [distributed] extra (Ray) with torch's CPU build, which Ray's Gloo all-reduce
# runs on (chapter 25); tools/install_torch.py --book installs torch alone, its
# CPU build, never the CUDA one without an NVIDIA GPU. The README says what it costs.
$(VENV)/.installed: pyproject.toml tools/install_torch.py | $(VENV)/bin/python
	$(PY) tools/install_torch.py --book
	$(PIP_EDITABLE) ".[notebook,distributed]"
	touch $@

# Test-only extras, and torch 2.13.0 as an independent oracle: its CPU build
# wherever an index offers one, never the CUDA build on a machine without an
# NVIDIA GPU (tools/install_torch.py says what it picks, or why it skips torch).
$(VENV)/.installed-test: pyproject.toml tools/install_torch.py $(VENV)/.installed
	$(PY) tools/install_torch.py
	$(PIP_EDITABLE) ".[notebook,dev,onnx,hf,distributed,site]"
	touch $@

install: $(VENV)/.installed

# The interpreter the venv is (or would be) made with.
which-python:
	@echo "$(PYTHON)"
install-test: $(VENV)/.installed-test

# Opens the book's index; the file browser shows notebooks/ (en/ and zh/).
lab: install
	cd notebooks && $(abspath $(VENV))/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) 00-index.ipynb

# The book as a static website in build/site/ (open build/site/index.html):
# every chapter, en and zh, with its stored outputs (never re-run), searchable,
# each page linking its twin language and launching its notebook on Binder.
$(VENV)/.installed-site: pyproject.toml $(VENV)/.installed
	$(PIP_EDITABLE) ".[site]"
	touch $@

site: $(VENV)/.installed-site
	$(PY) tools/build_site.py --out build/site

# The Vulkan, public-launch and browser stages run side by side (`-j2`): the
# browser test mostly waits on JupyterLab (54 s of CPU in 105 s): the Vulkan and
# browser stages took 199 s side by side against about 240 s one after the other. (The notebooks stay one
# nbval run after the other: beside the Binder build's, Ray's node in chapter 25
# timed out starting.)
test: install-test browser-deps vulkan-deps
	$(MAKE) --no-print-directory -j2 --output-sync=target test-python binder-build
	$(MAKE) --no-print-directory -j2 --output-sync=target test-vulkan test-public test-browser
	$(MAKE) --no-print-directory test-notebooks

test-python: install-test
	$(PY) -m pytest -n 2 --dist loadfile --durations=30 --ignore=tests/browser -m "not notebooks" tests

# System packages come from apt, without recommended packages, through sudo
# only when not root (`sudo -n` in CI or without a terminal, so never a hanging
# password prompt); where apt or sudo is missing or fails, it says so, and the
# tests needing them skip.
APT_INSTALL = sh tools/apt_install.sh $(1) $(2)

# Debian's Chromium for tests/browser (Playwright never downloads a browser) and
# for the figures' static PNGs (kaleido), with a CJK font so Chinese is not drawn as boxes.
browser-deps:
	@{ test -x /usr/bin/chromium && test -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc; } || \
	  $(call APT_INSTALL,browser-deps,chromium fonts-wqy-microhei)

# Mesa's Vulkan driver with lavapipe, a conformant Vulkan device on the CPU:
# with it, Taichi's Vulkan arch (SPIR-V kernels) is tested on every machine.
vulkan-deps:
	@{ ls /usr/share/vulkan/icd.d/lvp_icd.*.json && PATH="$$PATH:/usr/sbin:/sbin" ldconfig -p | grep -q libvulkan.so.1; } >/dev/null 2>&1 || \
	  $(call APT_INSTALL,vulkan-deps,mesa-vulkan-drivers libvulkan1)

# The conformance, autodiff and module-op families again on TaichiDevice.vulkan(),
# in a process of their own (one Taichi arch per process); they skip without Vulkan.
# Fusion[Taichi] runs them on the CPU only (test-python), to keep make test short.
# Not test_taichi_kernel.py: Taichi 1.7.4 computes no ndarray gradients on SPIR-V
# (taichi-dev/taichi#8524), so there `taichi_op` refuses to track, which
# tests/backend/test_vulkan_kernels.py checks.
GPU_FAMILIES := -k "taichi and not fusion" --ignore=tests/autodiff/test_taichi_kernel.py tests/backend tests/autodiff tests/nn/test_conv_pool.py
test-vulkan: install-test vulkan-deps
	BURNBOOK_TAICHI_ARCH=vulkan $(PY) -m pytest -p no:cacheprovider -n 2 --dist loadfile $(GPU_FAMILIES)

# The conformance suite on the Taichi backend once more with every launch and
# allocation through Taichi's public API (launcher.py's fallback for a Taichi upgrade);
# Autodiff[Taichi] adds no launch path of its own, so it is left out here.
test-public: install-test
	BURNBOOK_TAICHI_LAUNCH=public $(PY) -m pytest -p no:cacheprovider -n 2 --dist loadfile -k "taichi and not fusion and not autodiff" tests/backend

# The same GPU families on a real GPU: `make test-gpu ARCH=cuda` (or metal, vulkan).
# They skip, saying why, where that device does not exist.
ARCH ?= cuda
test-gpu: install-test
	BURNBOOK_TAICHI_ARCH=$(ARCH) $(PY) -m pytest -p no:cacheprovider -n 2 --dist loadfile $(GPU_FAMILIES)

# JupyterLab, a kernel and Chromium want both cores: run it on its own.
test-browser: install-test browser-deps
	$(PY) -m pytest -p no:cacheprovider tests/browser

# The en chapters run in the Binder environment, built from binder/ alone in a
# fresh venv (the `notebooks` test in tests/test_binder.py): what `make lab`
# installs (torch there is its CPU build, for chapter 25's Ray; no test tools),
# so a chapter importing anything else fails there. Where PyPI is unreachable
# that build cannot happen, and they run in .venv instead. The index and the
# solutions run in .venv. The zh
# chapters are not run again: each holds its en twin's code cells with their
# stored outputs, cell for cell (tests/test_notebooks.py checks it), so a
# second run would repeat the en run; `make test-notebooks-zh` runs them.
# Two notebooks at a time (xdist, whole files), each kernel on one thread for
# Taichi, OpenBLAS and OpenMP (with their default two threads each, two kernels
# spun against each other and ran slower than one at a time): measured when the
# zh chapters still ran here, the index, zh and solutions took 250 s against 323 s
# one at a time, the Binder en run 139 s against 204 s.
NBVAL_THREADS = OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 TI_CPU_MAX_NUM_THREADS=1
NBVAL = $(NBVAL_THREADS) $(PY) -m pytest -p no:cacheprovider -n 2 --dist loadfile --nbval --nbval-current-env \
	--nbval-sanitize-with notebooks/sanitize.cfg --durations=0
OFFLINE = $(shell $(PY) -c "import urllib.request as u; u.urlopen('https://pypi.org/simple/pip/', timeout=10)" >/dev/null 2>&1 || echo 1)
test-notebooks: install-test
	$(if $(OFFLINE),@echo "test-notebooks: PyPI is unreachable: the en chapters run in $(VENV) instead of a Binder environment")
	$(if $(OFFLINE),$(NBVAL) notebooks/en,BURNBOOK_BINDER_BUILD=$(BINDER_BUILD) $(PY) -m pytest -p no:cacheprovider -s -m notebooks tests/test_binder.py)
	$(NBVAL) notebooks/00-index.ipynb $(wildcard notebooks/solutions)

# The Binder environment of test-notebooks, built while test-python runs: about
# 75 s, mostly pip, which slowed test-python little (473 s beside it, 496 s
# alone the session before); the Binder stage of make test went from 176 s to
# 126 s. The Binder test reuses the build only if the repository's files are
# the ones it was built from, and builds again otherwise.
BINDER_BUILD = build/binder
binder-build: install-test
	$(if $(OFFLINE),@echo "binder-build: PyPI is unreachable: nothing to build",$(PY) tools/binder_build.py $(BINDER_BUILD))

test-notebooks-zh: install-test
	$(NBVAL) notebooks/zh

bench: install-test
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
