# stanjax: `make report` runs the quick suite on CPU and writes out/report/index.html; `make test` runs the tests.
# Python 3.12: from PATH (pyenv resolves it through .python-version), else pyenv's own folder.
PYTHON ?= $(shell command -v python3.12 2>/dev/null || ls -d $$HOME/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | tail -n 1)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
RESULTS := out/results
REPORT := out/report

.PHONY: install report test lock clean

install: $(INSTALLED)

$(INSTALLED): requirements.lock pyproject.toml
	@test -n "$(PYTHON)" || { echo "make: Python 3.12 not found; install it or pass PYTHON=/path/to/python3.12" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

report: $(INSTALLED)
	$(BIN)/stanjax run --suite quick --out $(RESULTS)
	$(BIN)/stanjax report $(RESULTS) -o $(REPORT)

test: $(INSTALLED)
	$(BIN)/python -m pytest

# Regenerate requirements.lock from pyproject.toml (needs PyPI); uv runs from its own throwaway venv.
lock:
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet uv
	.venv-lock/bin/uv pip compile --python-version 3.12 --extra test --generate-hashes pyproject.toml -o requirements.lock

clean:
	rm -rf $(VENV) .venv-lock out build .cache
