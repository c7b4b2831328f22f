# stanjax: `make report` runs the quick suite on CPU and writes out/report/index.html; `make test` runs the tests.
# Python 3.12: from PATH (pyenv resolves it through .python-version), else pyenv's own folder.
PYTHON ?= $(shell command -v python3.12 2>/dev/null || ls -d $$HOME/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | tail -n 1)
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
RUNTIME := $(VENV)/.runtime
INSTALLED := $(VENV)/.installed
LINKED := $(VENV)/.linked
# The installer: uv installs the lock's wheels in parallel (a fresh install here: pip 140 s, uv 20 s), into a venv
# made without pip (its ensurepip took 4 s) by the interpreter's own pip (--python: pip 22.3 or later), else by
# the venv's own pip after all.
UV_VERSION := 0.9.30
RESULTS := out/results
REPORT := out/report

.PHONY: install report test test-zoo test-fast precompile browser results-report docker-test lock clean gpu-carry gpu-stan docs
space := $(subst ,, )

install: $(LINKED) $(INSTALLED)

$(UV):
	@test -n "$(PYTHON)" || { echo "make: Python 3.12 not found; install it or pass PYTHON=/path/to/python3.12" >&2; exit 2; }
	$(PYTHON) -m venv --without-pip $(VENV)
	if $(PYTHON) -m pip --python $(BIN)/python --version >/dev/null 2>&1; \
	then $(PYTHON) -m pip --python $(BIN)/python install --quiet uv==$(UV_VERSION); \
	else $(BIN)/python -m ensurepip --default-pip >/dev/null && $(BIN)/pip install --quiet uv==$(UV_VERSION); fi

# What stanjax runs with first (requirements-run.lock, the lock's part that pyproject's dependencies pull in: all
# `make report` installs, 16 s of the whole lock's 27 s here), then the tests' and the docs' tools beside it
# (requirements.lock, the whole lock: `make test`, `make docs`). `make lock` writes both.
$(RUNTIME): requirements-run.lock | $(UV)
	$(UV) pip install --quiet --python $(BIN)/python --compile-bytecode --require-hashes -r requirements-run.lock
	touch $@

$(INSTALLED): requirements.lock $(RUNTIME)
	$(UV) pip install --quiet --python $(BIN)/python --compile-bytecode --require-hashes -r requirements.lock
	touch $@

# stanjax itself, installed in place and strict: stanjax/ and the folders it links to become one tree of links
# (build/__editable__.*/stanjax/) that mypy, pyright and IDEs read from any folder. A module added or removed
# changes its folder, which relinks (2 s); from the checkout's root the checkout itself is imported anyway.
LIBRARY_DIRS := $(shell find models jax_models runner reports stanjax -type d -not -name __pycache__ 2>/dev/null)
$(LINKED): $(RUNTIME) pyproject.toml $(LIBRARY_DIRS)
	$(UV) pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -C editable_mode=strict -e .
	touch $@

report: $(LINKED)
	$(BIN)/stanjax run --suite quick --out $(RESULTS)
	$(BIN)/stanjax report $(RESULTS) -o $(REPORT)

# The suite: every Stan program compiled first, two at a time (compilers' messages in out/test-compile.log), then
# the tests on two pytest-xdist workers, all but the zoo tier. `make test-zoo` runs that tier: the tests that run
# every model (the tiny campaign of the whole zoo) or a model at posteriordb's size; its time grows with the zoo,
# so `make test` leaves it out and CI runs both. `make test-fast` leaves out the slow tests and those that need a
# compiled Stan program (it compiles nothing): the edit loop. The 25 slowest tests are listed at the end.
TEST_JOBS ?= 2
PYTEST_WORKERS = $(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder --durations=25
test: $(LINKED) $(INSTALLED) browser
	$(BIN)/python -m tests.precompile --no-zoo --jobs $(TEST_JOBS) --log out/test-compile.log
	$(PYTEST_WORKERS) -m "not zoo"

test-zoo: $(LINKED) $(INSTALLED) precompile
	$(PYTEST_WORKERS) -m zoo

test-fast: $(LINKED) $(INSTALLED)
	$(BIN)/python -m pytest -m "not slow and not stan"

# The documentation site (mkdocs.yml): --strict fails on a broken link, a missing page or a docstring mkdocstrings
# cannot read; tests/test_docs.py builds it too.
docs: $(LINKED) $(INSTALLED)
	$(BIN)/mkdocs build --strict

# Compiles into httpstan's cache (~/.cache/httpstan), keyed by program text and interpreter: seconds once done.
# `make test` compiles all but the programs whose tests only the zoo tier runs (tests/tiers.py); `make test-zoo` all.
precompile: $(LINKED)
	$(BIN)/python -m tests.precompile --jobs $(TEST_JOBS) --log out/test-compile.log

# The report's browser test needs Debian's Chromium and its WebDriver; installed when missing (as root), else
# that test is skipped with the reason (CI sets STANJAX_REQUIRE_BROWSER=1, which makes a missing browser fail).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { test "$$(id -u)" = 0 && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    chromium chromium-driver >/dev/null; } || echo "make: no chromium/chromedriver: the browser test will skip" >&2

# Regenerate the committed rendering of results/ (results/report/: index.html, figures.html, models/, README.md)
# from its records; pages of models no longer in the records are removed with the folder first.
results-report: $(LINKED)
	rm -rf results/report/models
	$(BIN)/stanjax report results -o results/report --records-in-place

# Build the CPU Docker image and run the tiny suite in it (not part of `make test`: minutes, needs docker).
# `make docker-test CUDA=1` then builds and checks the CUDA image too (DEVICE=cuda: 3.2 GB of CUDA 12 wheels to
# download, an 8.2 GB image; no GPU needed): run without a GPU, `--device gpu` is exit 2 with one line and the tiny
# suite runs on the CPU. `make docker-test-cuda` checks the CUDA image alone.
.PHONY: docker-test-cuda lock-cuda
docker-test:
	docker/test.sh cpu $(if $(CUDA),cuda)

docker-test-cuda:
	docker/test.sh cuda

# Regenerate requirements-cuda.lock after `make lock` (needs PyPI): the CUDA image's extra wheels, jax[cuda12] at
# requirements.lock's jax version with every shared dependency held to requirements.lock's pins, all hashed.
lock-cuda:
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet uv==$(UV_VERSION)
	echo "jax[cuda12]==$$(sed -n 's/^jax==\([^ ]*\).*/\1/p' requirements.lock)" | .venv-lock/bin/uv pip compile \
	  --python-version 3.12 --python-platform linux --generate-hashes --custom-compile-command "make lock-cuda" \
	  -c requirements.lock - -o requirements-cuda.lock

# The locked wheels a borrowed GPU box lacks (its image has Python 3.12, JAX with CUDA, NumPy, SciPy, pandas,
# matplotlib, rich, jinja2, aiohttp, xarray, optax, equinox, diffrax; no internet): downloaded here into .gpu-carry/
# for the device tool to carry (14 MB); docker/gpu-step.sh puts them on its PYTHONPATH there. README: "On a borrowed
# GPU". httpstan's wheel goes without the C++ headers only compiling needs (docker/slim-httpstan.py: 33 -> 5.5 MB):
# the box samples modules built here and carried (make gpu-stan), so the checkout and both fit the device's 64 MiB.
GPU_CARRY := appdirs arviz arviz-base arviz-plots arviz-stats blackjax clikit cmdstanpy crashtest flowjax httpstan \
  inference-gym lazy-loader marshmallow msgspec numpyro orjson paramax pastel pylev pystan stanio webargs \
  xarray-einstats
gpu-carry: $(LINKED)
	grep -E "^($(subst $(space),|,$(strip $(GPU_CARRY))))==" requirements.lock | sed 's/ .*//' > .gpu-carry.txt
	$(PYTHON) -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
	  -d .gpu-carry -r .gpu-carry.txt
	rm .gpu-carry.txt
	$(BIN)/python docker/slim-httpstan.py .gpu-carry/httpstan-*.whl

# Bundled Stan's modules for the GPU campaign's plan (GPU_PLAN: the options its steps will get), built here and
# carried to the GPU box in .gpu-stan/ (about 1 MB a program): programs the box compiled itself died there
# (docs/gpu.md, "On a borrowed GPU"). The plan's Stan programs are read from its dry run, those of runs it left out
# as longer than a step too (estimated from walls here; the box's --calibrate may find that they fit).
GPU_PLAN ?= --cores 16 --budget 11m --step 5.5m
GPU_ISA ?= x86-64-v3
gpu-stan: $(LINKED)
	$(BIN)/stanjax campaign gpu --dry-run $(GPU_PLAN) --isa $(GPU_ISA) --out .gpu-stan-plan \
	  | awk '($$1 == "cpu" || $$1 == "left") && / · stan-cpu · / {print $$4 ($$0 ~ / threads · / ? ":threaded" : "")}' \
	  | sort -u > .gpu-stan.txt
	$(BIN)/python docker/gpu-stan-carried.py pack $(GPU_ISA) $$(cat .gpu-stan.txt)
	rm -f .gpu-stan.txt

# Regenerate requirements.lock from pyproject.toml (needs PyPI), then requirements-run.lock, its runtime part (the
# same pins and hashes); uv runs from its own throwaway venv.
lock:
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet uv==$(UV_VERSION)
	.venv-lock/bin/uv pip compile --python-version 3.12 --extra test --extra docs --generate-hashes pyproject.toml \
	  -o requirements.lock
	.venv-lock/bin/uv pip compile --python-version 3.12 --generate-hashes --custom-compile-command "make lock" \
	  -c requirements.lock pyproject.toml -o requirements-run.lock

clean:
	rm -rf $(VENV) .venv-lock out build .cache .gpu-carry .gpu-stan
