"""How the bundled Stan builds a program: STAN_THREADS only where the program runs threads (its autodiff stack in
thread-local storage cost arma 2x a gradient), symbols hidden so a module of each kind samples in one process."""

import subprocess

import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.engines import stan_build
from stanjax.runner.engines.stan_bundled import HttpstanBackend
from stanjax.runner.measure.jobs import WORKER_PYTHON

COVTYPE = "covtype_synth-logistic_regression"
EIGHT_SCHOOLS = "eight_schools-eight_schools_noncentered"


def test_only_programs_that_run_threads_are_built_with_stan_threads():
    spec = models.get(COVTYPE)
    assert spec.stan_threaded_file is not None
    plain, threaded = (
        HttpstanBackend.program_code(path, "native") for path in (spec.stan_file, spec.stan_threaded_file)
    )
    assert "without STAN_THREADS" in plain and "with STAN_THREADS" in threaded
    assert plain.split("// stanjax:")[1] != threaded.split("// stanjax:")[1]  # their own cache keys
    assert ("STAN_THREADS", None) in stan_build.macros(True) and ("STAN_THREADS", None) not in stan_build.macros(False)
    assert stan_build.uses_threads(spec.stan_threaded_file.read_text())
    assert not stan_build.uses_threads(spec.stan_file.read_text())
    assert stan_build.HIDDEN_SYMBOLS in stan_build.flags("native")
    assert stan_build.services_path("-O3", True) != stan_build.services_path("-O3", False)


BOTH_KINDS = f"""
from stanjax import models
from stanjax.runner.core.config import RunConfig
from stanjax.runner.engines.stan_bundled import HttpstanBackend
backend = HttpstanBackend()
config = RunConfig(size="tiny", chains=2, warmup=100, draws=100)
covtype, schools = models.get("{COVTYPE}"), models.get("{EIGHT_SCHOOLS}")
runs = [
    (covtype.stan_threaded_file, {{**covtype.data("tiny", 1), "grainsize": 1}}),
    (schools.stan_file, schools.data("tiny", 1)),
    (covtype.stan_file, covtype.data("tiny", 1)),
]
handles = [(backend.compile(path), data) for path, data in runs]  # every module loaded before any samples
for handle, data in handles:
    result = backend.sample(handle, data, config, seed=3)
    print(result.info["stan_threads"], result.stats.n_leapfrog.sum() > 0)
"""


@pytest.mark.stan
def test_a_module_with_stan_threads_and_modules_without_sample_in_one_process():
    """A test process (or a density check) loads many modules; built with default visibility, a module without
    STAN_THREADS loaded beside one with it shared its autodiff stack and the process died (segfault, exit 139)."""
    done = subprocess.run([WORKER_PYTHON, "-c", BOTH_KINDS], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True", "False", "True", "False", "True"]
