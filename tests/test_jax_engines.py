"""JAX engines beyond NumPyro's default: BlackJAX NUTS and ChEES, NumPyro with vectorised chains."""

import numpy as np
import pytest

from stanjax import jax_models, models
from stanjax.runner import records
from stanjax.runner.cli import main
from stanjax.runner.config import Placement, RunConfig
from stanjax.runner.engines import get_engine
from stanjax.runner.engines.jax_setup import initial_points, start_jax
from stanjax.runner.metrics import summarise
from stanjax.runner.studies import ITERATIONS
from stanjax.runner.suites import SUITES

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
        jax, jax_models.load(spec.model_name), spec.data("tiny", 1), config, jax.random.PRNGKey(3)
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
from stanjax.runner.config import Placement
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
    from stanjax.runner.campaign import WORKER_PYTHON

    env = {key: value for key, value in os.environ.items() if key != "JAX_PLATFORMS"}
    done = subprocess.run(
        [WORKER_PYTHON, "-c", PLATFORM_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "cpu"
