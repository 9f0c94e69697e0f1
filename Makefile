# burnbook: `make lab` opens the book, `make test` checks everything, `make bench` measures.
# Every target installs what it needs into .venv first, so a fresh clone needs nothing else.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

# Offline machines (CI included) read MNIST from a data folder; ../shared/data when it exists.
SHARED_DATA := $(abspath $(wildcard ../shared/data))
export BURNBOOK_DATA ?= $(SHARED_DATA)
export TI_LOG_LEVEL ?= warn
export PYTHONHASHSEED := 0

.PHONY: lab test test-python test-vulkan test-browser test-notebooks bench install install-test browser-deps vulkan-deps clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# The package with its notebook extras (what a reader needs).
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e ".[notebook]"
	touch $@

# Test-only extras; torch 2.13.0 is the CPU build, used as an independent oracle.
$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PIP) install -q "torch==2.13.0"
	$(PIP) install -q -e ".[notebook,dev,onnx,hf]"
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# Opens the book's index; the file browser shows notebooks/ (en/ and zh/).
lab: install
	cd notebooks && $(abspath $(VENV))/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) 00-index.ipynb

test: install-test browser-deps vulkan-deps test-python test-vulkan test-browser test-notebooks

test-python: install-test
	$(PY) -m pytest -n 2 --dist loadfile --ignore=tests/browser tests

# System packages come from apt, without recommended packages, through sudo
# only when not root; where apt is missing or fails, the tests needing them skip.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
APT_INSTALL = { command -v apt-get >/dev/null || { echo "$(1): no apt-get here; install $(2) with your package manager, or the tests that need them will be skipped"; exit 0; }; \
	  echo "$(1): installing $(2): $(SUDO) apt-get install --no-install-recommends"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $(2) || \
	  echo "$(1): $(2) not installed: the tests that need them will be skipped"; }

# Debian's Chromium for tests/browser (Playwright never downloads a browser).
browser-deps:
	@test -x /usr/bin/chromium || $(call APT_INSTALL,browser-deps,chromium)

# Mesa's Vulkan driver with lavapipe, a conformant Vulkan device on the CPU:
# with it, Taichi's Vulkan arch (SPIR-V kernels) is tested on every machine.
vulkan-deps:
	@{ ls /usr/share/vulkan/icd.d/lvp_icd.*.json && ldconfig -p | grep -q libvulkan.so.1; } >/dev/null 2>&1 || \
	  $(call APT_INSTALL,vulkan-deps,mesa-vulkan-drivers libvulkan1)

# The conformance, autodiff and module-op families again on TaichiDevice.vulkan(),
# in a process of their own (one Taichi arch per process); they skip without Vulkan.
# Not test_taichi_kernel.py: Taichi 1.7.4 computes no ndarray gradients on SPIR-V
# (taichi-dev/taichi#8524), so there `taichi_op` refuses to track, which
# tests/backend/test_vulkan_kernels.py checks.
test-vulkan: install-test vulkan-deps
	BURNBOOK_TAICHI_ARCH=vulkan $(PY) -m pytest -p no:cacheprovider -n 2 --dist loadfile -k taichi \
		--ignore=tests/autodiff/test_taichi_kernel.py tests/backend tests/autodiff tests/nn/test_conv_pool.py

# JupyterLab, a kernel and Chromium want both cores: run it on its own.
test-browser: install-test browser-deps
	$(PY) -m pytest -p no:cacheprovider tests/browser

test-notebooks: install-test
	$(PY) -m pytest -p no:cacheprovider --nbval --nbval-current-env \
		--nbval-sanitize-with notebooks/sanitize.cfg --durations=0 notebooks/

bench: install-test
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
