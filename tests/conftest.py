"""The test tiers, marked in the test files (a module's ``pytestmark`` or a test's decorator), and their order.

- ``stan``: the test builds or runs a compiled Stan program (httpstan compiles one in ~35-65 s on first use).
  ``make test`` compiles every program first, two at a time (``tests/precompile.py``), so the tests find them in
  httpstan's cache; ``make test-fast`` (``-m "not slow and not stan"``) compiles nothing.
- ``slow``: runs real samplers, whole campaigns or a JAX self-check in a subprocess (tens of seconds and more).
- ``zoo``: runs every model of the zoo (the tiny campaign of all of them), a model at posteriordb's size, or the
  own tests of a posteriordb posterior beyond one of each kind (``tests/tiers.py``, marked here): the tier whose
  time grows with the zoo. ``make test`` leaves it out (``-m "not zoo"``), ``make test-zoo`` runs it
  alone, CI runs both.
- Order: under pytest-xdist (``make test``: ``-n 2 --dist loadfile --no-loadscope-reorder``) each file runs on
  one worker, so a module-scoped fixture (a tiny campaign of test_end_to_end.py) runs once a parameter; the files that take
  longest are handed out first, so none starts last. (``--dist loadgroup`` would spread the other files test by
  test, but with pytest 9.2 and xdist 3.8 it ignores ``xdist_group`` marks: pytest-xdist issue #1386.)
"""

from __future__ import annotations

import os
import sys

import pytest

from stanjax import models
from stanjax.models import UsageError
from stanjax.runner.core.paths import cache_dir
from tests.tiers import zoo_only

# JAX's persistent compilation cache for every JAX process of the session, not only the run workers (which set it in
# runner.engines.jax_setup): this process and those the tests start (the sharding self-checks, the studies'
# measurements) then share what another already compiled, e.g. the eager operations of NumPyro's initialisation
# on the same tiny data. Set before any test module imports JAX; an unusable STANJAX_CACHE is left to its test.
try:
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(cache_dir() / "jax"))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
except UsageError:
    pass

# Campaigns started by tests measure nothing: their runs, flagged loaded beside the other pytest worker, are not
# run again (a test of the rerun sets its own count).
os.environ.setdefault("STANJAX_RERUNS", "0")

# Longest first (measured with --durations=0 beside the other worker on a loaded 2-core machine); the other
# files keep their order after these. The zoo tier's end-to-end file runs first in `make test-zoo`.
LONGEST_FIRST = [
    "test_end_to_end.py",
    "test_sharding.py",
    "test_studies.py",
    "test_report.py",
    "test_stan_bundled.py",
    "test_faults.py",
    "test_density.py",
    "test_jax_engines.py",
    "test_approximate.py",
    "test_nightly.py",
    "test_cli.py",
    "test_check.py",
]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:  # a model's own test of a posterior tests/tiers.py leaves to the zoo tier
        params = getattr(item, "callspec", None) and item.callspec.params.values()
        ids = [p.id if isinstance(p, models.ModelSpec) else p for p in params or ()]
        if any(isinstance(model_id, str) and zoo_only(model_id) for model_id in ids):
            item.add_marker(pytest.mark.zoo)
    rank = {file: i for i, file in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept otherwise


@pytest.fixture
def own_models(monkeypatch):
    """Model folders a test takes in (``--model-dir``, ``sj.check`` of a pair) leave the registry, the environment
    (which workers inherit) and the loaded NumPyro modules as they were."""
    monkeypatch.setenv(models.MODEL_DIRS_ENV, "")
    modules = set(sys.modules)
    models.registry.cache_clear()
    yield
    for name in set(sys.modules) - modules:
        if name.startswith("stanjax.jax_models."):
            del sys.modules[name]
    models.registry.cache_clear()
