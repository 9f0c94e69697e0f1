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

.PHONY: lab test test-python test-browser test-notebooks bench install install-test browser-deps clean

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

test: install-test browser-deps test-python test-browser test-notebooks

test-python: install-test
	$(PY) -m pytest -n 2 --dist loadfile --ignore=tests/browser tests

# Debian's Chromium for tests/browser (Playwright never downloads a browser).
browser-deps:
	@test -x /usr/bin/chromium || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium || \
	  echo "chromium not installed: the browser test will be skipped"; }

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
