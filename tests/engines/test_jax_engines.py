"""JAX engines beyond NumPyro's default: BlackJAX NUTS and ChEES, NumPyro with vectorised chains."""

import numpy as np
import pytest

from stanjax import jax_models, models
from stanjax.runner.campaigns.studies import ITERATIONS
from stanjax.runner.commands.cli import main
from stanjax.runner.core import records
from stanjax.runner.core.config import Placement, RunConfig
from stanjax.runner.core.engine_registry import get_engine
from stanjax.runner.engines.jax_setup import initial_points, start_jax
from stanjax.runner.measure.metrics import summarise
from stanjax.runner.measure.suites import SUITES

EIGHT_SCHOOLS = "eight_schools-eight_schools_noncentered"
LOGISTIC = "covtype_synth-logistic_regression"


# Each engine's settings here are those of a run another test makes of the same model (NUTS: the tiny suite's, as in
# test_jax_engines_run_through_the_cli_and_pass_the_gates; ChEES: the chains study's 4-chain run at its tiny scale),
# so the programs compiled here are the ones that run's worker finds in JAX's persistent cache, and not compiled twice.
TRACE_SETTINGS = {
    "blackjax_nuts": (SUITES["tiny"]["warmup"], SUITES["tiny"]["draws"]),
    "blackjax_chees": ITERATIONS["tiny"],
}


@pytest.mark.parametrize("engine_name", ["blackjax_nuts", "blackjax_chees"])
def test_blackjax_traces_warmup_and_sampling_once_each(engine_name):
    """One trace per phase: a second trace would be a silent recompilation inside the timed run."""
    spec = models.get(LOGISTIC)
    warmup, draws = TRACE_SETTINGS[engine_name]
    config = RunConfig(size="tiny", chains=4, warmup=warmup, draws=draws)
    engine = get_engine(engine_name)
    result = engine.sample(
        engine.compile(spec), spec.data("tiny", 1), config, seed=5, placement=Placement("cpu", "float64", "vectorized")
    )
    assert result.info["traces"] == {"warmup": 1, "sampling": 1}
    assert result.draws["beta"].shape == (4, draws, 5)
    assert result.stats.n_leapfrog.shape == (4, draws) and result.stats.n_leapfrog.min() >= 1
    assert result.timings.compile_s > 0 and result.timings.warmup_s > 0 and result.timings.sampling_s > 0
    assert result.info["dtype"] == "float64" and result.info["chain_method"] == "vectorized"
    assert result.info["matmul_precision"] == "highest"  # never TF32 on a GPU
    metrics = summarise(result, [p.name for p in spec.parameters])
    assert metrics.min_ess_bulk > 50


def test_blackjax_refuses_one_device_per_chain():
    with pytest.raises(ValueError, match="one vectorised batch"):
        get_engine("blackjax_nuts").sample(None, {}, RunConfig(), 1, Placement("cpu", "float64", "parallel"))


@pytest.mark.slow
def test_jax_engines_run_through_the_cli_and_pass_the_gates(tmp_path):
    out = tmp_path / "results"
    assert (
        main(
            [
                "run",
                "--suite",
                "tiny",
                "--models",
                EIGHT_SCHOOLS,
                LOGISTIC,
                "--engines",
                "blackjax_nuts",
                "numpyro",
                "--chain-method",
                "vectorized",
                "--cores",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    recs = records.read(out)
    assert sorted((r.model_id, r.engine) for r in recs) == sorted(
        (m, e) for m in (EIGHT_SCHOOLS, LOGISTIC) for e in ("blackjax_nuts", "numpyro")
    )
    for r in recs:
        assert r.status == "ok" and r.valid, (r.model_id, r.engine, r.failed_gates)
        assert (r.device, r.precision, r.chain_method) == ("cpu", "float64", "vectorized")
        assert r.engine_info["chain_method"] == "vectorized" and len(r.engine_info["devices"]) == 1
        assert r.cores == 1 and r.engine_info["cpu_threads"] == 1  # the worker was pinned: XLA saw one core
        assert r.engine_info["blas_threads"] == "1"
    blackjax = [r for r in recs if r.engine == "blackjax_nuts"]
    assert all(r.engine_info["traces"] == {"warmup": 1, "sampling": 1} for r in blackjax)


@pytest.mark.parametrize("chains, starts", [(4, 4), (64, 16)])
def test_many_chains_start_in_superchains(chains, starts):
    """From 64 chains on, the chains of a superchain share one initial point (nested R-hat's design); fewer chains
    each start apart."""
    spec = models.get(EIGHT_SCHOOLS)
    config = RunConfig(size="tiny", chains=chains)
    jax = start_jax(Placement("cpu", "float64", "vectorized"), chains)
    points, _, _ = initial_points(
        jax, jax_models.load(spec.jax_file), spec.data("tiny", 1), config, jax.random.PRNGKey(3)
    )
    mu = np.asarray(points["mu"])
    assert mu.shape == (chains,) and len(set(mu.tolist())) == starts
    if config.superchains:
        ids = np.asarray(config.superchain_ids())
        assert all(len(set(mu[ids == k].tolist())) == 1 for k in range(starts))


@pytest.mark.slow
@pytest.mark.parametrize("engine_name", ["numpyro", "blackjax_chees"])
def test_a_many_chain_run_is_gated_on_nested_rhat(tmp_path, engine_name):
    """64 short chains through the CLI: the record holds the superchain layout and the nested R-hat gate."""
    out = tmp_path / "results"
    assert (
        main(
            [
                "run",
                "--suite",
                "tiny",
                "--models",
                EIGHT_SCHOOLS,
                "--engines",
                engine_name,
                "--chain-method",
                "vectorized",
                "--chains",
                "64",
                "--warmup",
                "300",
                "--draws",
                "100",
                "--cores",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    (record,) = records.read(out)
    assert record.status == "ok" and record.metrics.superchains == 16
    assert record.engine_info["superchains"] == 16
    rhat = record.gates["rhat"]
    assert rhat["statistic"] == "nested R-hat" and rhat["chains_per_superchain"] == 4
    assert rhat["max_rhat_nested"] == record.metrics.max_rhat_nested
    assert record.gates["ess"]["limit"] == 1600


PLATFORM_PROBE = """
import jax  # imported before start_jax, as a module the worker loads first may do
from stanjax.runner.core.config import Placement
from stanjax.runner.engines.jax_setup import start_jax
start_jax(Placement("cpu", "float64", "vectorized"), 1)
print(jax.config.jax_platforms)
"""


def test_a_cpu_run_pins_jax_to_the_cpu_even_when_jax_was_imported_first():
    """JAX reads JAX_PLATFORMS once, at import: set after it, a CPU run's worker on a box with a GPU started JAX on
    the GPU (every NumPyro-CPU run of the first H200 campaign failed so). Here no GPU exists, so the test reads
    the platform JAX was pinned to, which stays unset when only the environment variable is set late."""
    import os
    import subprocess

    from stanjax.models import ROOT
    from stanjax.runner.measure.jobs import WORKER_PYTHON

    env = {key: value for key, value in os.environ.items() if key != "JAX_PLATFORMS"}
    done = subprocess.run(
        [WORKER_PYTHON, "-c", PLATFORM_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "cpu"


SAME_DRAWS_PROBE = """
import json, sys
import numpyro
numpyro.set_host_device_count(2)
import numpy as np
from numpyro.infer import MCMC, NUTS, init_to_uniform
from stanjax import jax_models, models
from stanjax.runner.core.config import Placement, RunConfig
from stanjax.runner.core.engine_registry import get_engine
from stanjax.runner.engines.jax_setup import start_jax
from stanjax.runner.engines.jax_setup import split_data
import functools

spec = models.get(sys.argv[1])
data = spec.data("tiny", 1)
config = RunConfig(size="tiny", chains=2, warmup=60, draws=40)
engine = get_engine("numpyro")
runs = {m: engine.sample(engine.compile(spec), data, config, 7, Placement("cpu", "float64", m))
        for m in ("sequential", "parallel")}
jax = start_jax(Placement("cpu", "float64", "sequential"), 2)
sizes, arrays = split_data(data)
kernel = NUTS(functools.partial(jax_models.load(spec.jax_file), **sizes), target_accept_prob=config.target_accept,
              max_tree_depth=config.max_treedepth, init_strategy=init_to_uniform(radius=config.init_radius))
mcmc = MCMC(kernel, num_warmup=60, num_samples=40, num_chains=2, chain_method="sequential", progress_bar=False,
            jit_model_args=True)
mcmc.warmup(jax.random.PRNGKey(7), extra_fields=("num_steps",), collect_warmup=True, **arrays)
warmup_gradients = int(np.sum(mcmc.get_extra_fields()["num_steps"]))
mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps",), **arrays)
reference = {k: np.asarray(v, np.float64) for k, v in mcmc.get_samples(group_by_chain=True).items()}
steps = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["num_steps"])
print(json.dumps({m: {"draws": all(np.array_equal(r.draws[k], reference[k]) for k in reference),
                      "steps": bool(np.array_equal(r.stats.n_leapfrog, steps)),
                      "warmup_gradients": r.stats.warmup_gradients == warmup_gradients,
                      "traces": r.info["traces"], "bound": r.info["data_bound"]}
                  for m, r in runs.items()}))
"""


def test_numpyro_engine_draws_what_numpyro_mcmc_draws():
    """The engine's compiled loop is MCMC's (jit_model_args=True): the same seed gives the same draws, leapfrog
    counts and warmup gradients, bit for bit, one chain after another and one device a chain. (MCMC's own parallel
    chains fold the data into the program as constants, which moves the last bits; with the data as arguments
    they agree.)"""
    import json
    import subprocess

    from stanjax.models import ROOT
    from stanjax.runner.measure.jobs import WORKER_PYTHON

    done = subprocess.run(
        [WORKER_PYTHON, "-c", SAME_DRAWS_PROBE, EIGHT_SCHOOLS], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout.splitlines()[-1])
    for method, found in runs.items():
        assert found == {
            "draws": True,
            "steps": True,
            "warmup_gradients": True,
            "traces": {"warmup": 1, "sampling": 1},
            "bound": ["J"],
        }, method


def _sleeping_model(when: str):
    """A normal model that sleeps 1 s once: while it is traced (compilation) or while it runs (sampling)."""
    import time

    import jax
    import numpyro
    import numpyro.distributions as dist

    slept = []

    def sleep_once(*_):
        if not slept:
            slept.append(True)
            time.sleep(1.0)

    def model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        if when == "compile":
            sleep_once()
        else:
            jax.debug.callback(sleep_once, mu)
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    return model


@pytest.mark.parametrize("when", ["compile", "sampling"])
def test_numpyro_sampler_clock_holds_no_compilation(when):
    """Direct clocks: a second of sleep planted in compilation stays out of the sampler's time; planted in a run
    of the sampler, it shows there. (Wall less jax.monitoring's compile spans, the clock before, counted the model's
    first trace, outside any span, as warmup.)"""
    config = RunConfig(size="tiny", chains=1, warmup=50, draws=50)
    result = get_engine("numpyro").sample(
        {"model": _sleeping_model(when)},
        {"y": np.linspace(-1.0, 1.0, 5)},
        config,
        seed=3,
        placement=Placement("cpu", "float64", "sequential"),
    )
    sampler_s = result.timings.warmup_s + result.timings.sampling_s
    if when == "compile":
        assert sampler_s < 0.5 and result.timings.compile_s >= 1.0
    else:
        assert sampler_s >= 1.0
    assert result.info["data_as_arguments"] == ["y"] and result.info["traces"] == {"warmup": 1, "sampling": 1}
