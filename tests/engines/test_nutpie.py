"""nutpie on both densities: nutpie_jax everywhere; nutpie_stan where a BridgeStan build is found (``BRIDGESTAN``,
made by benchmarks/bridgestan_from_httpstan.sh) and skipped, with the reason, where none is (as in CI); refused in
one line where asked for without one."""

import time

import numpy as np
import pytest
import xarray as xr

from stanjax import models
from stanjax.runner.commands.cli import main
from stanjax.runner.commands.compile import programs_for
from stanjax.runner.core import records
from stanjax.runner.core.config import RunConfig
from stanjax.runner.core.engine_registry import entry, find_bridgestan, get_engine, label
from stanjax.runner.engines import nutpie
from stanjax.runner.measure.plan import Request, plan

EIGHT_SCHOOLS = "eight_schools-eight_schools_noncentered"
LOGISTIC = "covtype_synth-logistic_regression"
NO_BRIDGESTAN = pytest.mark.skipif(
    find_bridgestan() is None,
    reason="no BridgeStan build found: set BRIDGESTAN to one (benchmarks/bridgestan_from_httpstan.sh) for nutpie_stan",
)
ENGINES = [pytest.param("nutpie_stan", marks=[NO_BRIDGESTAN, pytest.mark.stan]), "nutpie_jax"]


@pytest.mark.slow
@pytest.mark.parametrize("engine_name", ENGINES)
def test_nutpie_runs_through_the_cli_and_passes_the_gates(engine_name, tmp_path):
    """The tiny suite's settings reach nutpie as its own (tune, draws, chains, target acceptance, tree depth), its
    chains run on the worker's cores, float64, and both clocks hold: the sampler's within the user's."""
    out = tmp_path / "results"
    argv = ["run", "--suite", "tiny", "--models", EIGHT_SCHOOLS, LOGISTIC, "--engines", engine_name, "--cores", "2"]
    assert main([*argv, "--out", str(out)]) == 0
    recs = records.read(out)
    assert sorted(r.model_id for r in recs) == sorted([EIGHT_SCHOOLS, LOGISTIC])
    for r in recs:
        assert r.status == "ok" and r.valid, (r.model_id, r.failed_gates)
        assert r.label == label(engine_name, entry(engine_name).front_end(), "cpu", "float64", "parallel")
        settings = r.engine_info["nutpie_settings"]["settings"]
        assert (settings["num_tune"], settings["num_draws"], settings["num_chains"]) == (500, 1000, 4)
        assert (settings["maxdepth"], settings["adapt_options"]["step_size_settings"]["target_accept"]) == (10, 0.8)
        assert r.engine_info["chains_at_once"] == 2 and r.engine_info["dtype"] == "float64"
        assert 0 < r.timings.warmup_s and 0 < r.timings.sampling_s and r.timings.sampler_s <= r.timings.user_s
        assert r.metrics.gradients_sampling > 0 and r.metrics.gradients_warmup and r.metrics.gradients_warmup > 0
    if engine_name == "nutpie_stan":  # built as the bundled Stan for the host, threaded as nutpie needs
        flags = recs[0].engine_info["compile_flags"]
        assert "-march=native" in flags and "-DSTAN_THREADS" in flags and "-ftls-model=initial-exec" in flags
    else:
        assert all(r.engine_info["data_as_arguments"] for r in recs) and all(r.timings.compile_s > 0 for r in recs)


@pytest.mark.slow
@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("model_id", [EIGHT_SCHOOLS, LOGISTIC])
def test_draws_are_the_models_parameters_and_the_statistics_per_draw(engine_name, model_id):
    spec = models.get(model_id)
    config = RunConfig(size="tiny", chains=2, warmup=200, draws=100, target_accept=0.9, max_treedepth=8)
    engine = get_engine(engine_name)
    placement = entry(engine_name).placement("cpu")
    data = spec.data("tiny", 1)
    result = engine.sample(engine.compile(spec, placement), data, config, seed=5, placement=placement)
    expected = {p.name: (2, 100, *p.resolve_shape(data)) for p in spec.parameters}
    assert {name: draws.shape for name, draws in result.draws.items()} == expected
    assert result.stats.n_leapfrog.shape == result.stats.divergent.shape == (2, 100)
    assert result.stats.divergent.dtype == bool and 1 <= result.stats.n_leapfrog.min()
    assert result.stats.n_leapfrog.max() <= 2**config.max_treedepth - 1
    assert result.stats.warmup_gradients >= 200 * 2 and len(result.stats.step_size) == 2
    settings = result.info["nutpie_settings"]["settings"]
    assert (settings["maxdepth"], settings["adapt_options"]["step_size_settings"]["target_accept"]) == (8, 0.9)
    assert settings["seed"] == 5 and result.info["chains_at_once"] == min(2, result.info["cpu_threads"])


@pytest.mark.slow
def test_nutpie_jax_samples_a_model_whose_data_names_an_array_x():
    """nutpie hands the position as the first argument and the shared data as keywords: the GPs' data name their
    inputs x (every run of gp_pois_regr failed, 2026-12-02, "logp() got multiple values for argument 'x'")."""
    spec = models.get("gp_pois_regr-gp_pois_regr")
    data = spec.data("tiny", 1)
    assert "x" in data
    engine = get_engine("nutpie_jax")
    placement = entry("nutpie_jax").placement("cpu")
    config = RunConfig(size="tiny", chains=2, warmup=100, draws=50)
    result = engine.sample(engine.compile(spec, placement), data, config, seed=5, placement=placement)
    assert {p.name for p in spec.parameters} <= set(result.draws)
    assert all(np.isfinite(draws).all() for draws in result.draws.values())


def test_nutpies_statistics_are_read_from_its_trace():
    """Leapfrog steps and divergences per draw from the sampling phase, the warmup's gradients from its own, the
    adapted step size before its jitter, and the sampler's seconds split by the phases' gradients."""
    draws = {"dims": ("chain", "draw")}
    trace = xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"mu": (draws["dims"], np.zeros((2, 3)))}),
            "sample_stats": xr.Dataset(
                {
                    "n_steps": (draws["dims"], np.array([[3, 7, 15], [1, 3, 7]], np.uint64)),
                    "diverging": (draws["dims"], np.array([[False, True, False], [False, False, True]])),
                    "depth": (draws["dims"], np.array([[2, 3, 4], [1, 2, 3]], np.uint64)),
                    "step_size": (draws["dims"], np.array([[0.5, 0.6, 0.4], [0.3, 0.2, 0.25]])),
                    "step_size_bar": (draws["dims"], np.array([[0.5, 0.5, 0.5], [0.25, 0.25, 0.25]])),
                },
                attrs={"inference_library_settings": '{"settings": {}}'},
            ),
            "warmup_sample_stats": xr.Dataset({"n_steps": (draws["dims"][:1] + ("draw",), np.array([[40], [24]]))}),
        }
    )
    sampled = nutpie.Sampled(trace, sampler_s=1.0, chain_s=[0.5, 0.5], cores=2)
    result = nutpie.result(sampled, time.perf_counter(), compile_s=0.0, cached=False, source="", info={})
    np.testing.assert_array_equal(result.stats.n_leapfrog, [[3, 7, 15], [1, 3, 7]])
    np.testing.assert_array_equal(result.stats.divergent, [[False, True, False], [False, False, True]])
    assert result.stats.warmup_gradients == 64 and result.stats.step_size == [0.5, 0.25]
    assert result.timings.warmup_s == pytest.approx(64 / 100) and result.timings.sampling_s == pytest.approx(36 / 100)


def test_a_nutpie_failure_says_its_cause_in_one_line_without_rusts_backtrace():
    from nutpie.compiled_pyfunc import from_pyfunc

    def make_logp():
        return lambda x: (float("nan"), np.zeros_like(x))

    model = from_pyfunc(
        ndim=2,
        make_logp_fn=make_logp,
        make_expand_fn=lambda *seeds: lambda x: {"x": np.asarray(x)},
        expanded_dtypes=[np.dtype(np.float64)],
        expanded_shapes=[(2,)],
        expanded_names=["x"],
    )
    with pytest.raises(RuntimeError) as failed:
        nutpie.run(model, RunConfig(chains=2, warmup=10, draws=10), seed=1)
    message = str(failed.value)
    assert message.startswith("nutpie: All initialization points failed") and "BadLogp(NaN)" in message
    assert "\n" not in message and "backtrace" not in message


def test_the_labels_and_the_sides_of_the_pairings_that_tell_sampler_from_gradient():
    """nutpie-JAX ÷ nutpie-Stan is the gradient's effect (one sampler), NumPyro ÷ nutpie-JAX the sampler's (one
    gradient), nutpie-Stan ÷ Stan the sampler's on Stan's side: the report's pairings put those numerators on top."""
    from stanjax.reports.headline import label_rank

    front_ends = {"numpyro": "numpyro", "nutpie_jax": "jax", "nutpie_stan": "bridgestan", "stan": "bundled"}
    labels = {name: label(name, front_end, "cpu", "float64", "parallel") for name, front_end in front_ends.items()}
    assert list(labels.values()) == ["NumPyro-CPU", "nutpie-JAX-CPU", "nutpie-Stan-CPU", "Stan-CPU"]
    setups = {name: {"engine": name, "device": "cpu", "precision": "float64", "label": labels[name]} for name in labels}
    assert sorted(setups, key=lambda name: label_rank(setups[name])) == list(front_ends)


def test_run_help_lists_the_nutpie_engines(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and "nutpie_stan" in out and "nutpie_jax" in out


def test_nutpie_stan_without_a_bridgestan_build_is_refused_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("BRIDGESTAN", str(tmp_path / "nowhere"))
    out = tmp_path / "results"
    argv = ["run", "--suite", "tiny", "--models", EIGHT_SCHOOLS, "--engines", "nutpie_stan", "numpyro"]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nutpie_stan: nutpie runs a Stan program through BridgeStan" in err
    assert "benchmarks/bridgestan_from_httpstan.sh" in err and "BRIDGESTAN=" in err and not out.exists()


@pytest.fixture
def broken_bridgestan(tmp_path, monkeypatch):
    """A BridgeStan folder ``find_bridgestan`` takes whose make fails, and a cache of the test's own."""
    root = tmp_path / "bridgestan"
    for name in ("bin/stanc", "stan/lib/stan_math/make/compiler_flags"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "src" / "version.hpp").parent.mkdir()
    (root / "src" / "version.hpp").write_text(
        "".join(f"#define BRIDGESTAN_{k} {v}\n" for k, v in zip(("MAJOR", "MINOR", "PATCH"), (2, 7, 0)))
    )
    (root / "stan" / "src" / "stan").mkdir(parents=True)
    (root / "stan" / "src" / "stan" / "version.hpp").write_text(
        "#define STAN_MAJOR 2\n#define STAN_MINOR 39\n#define STAN_PATCH 0\n"
    )
    (root / "Makefile").write_text("%:\n\t@echo planted: no compiler here; exit 1\n")
    monkeypatch.setenv("BRIDGESTAN", str(root))
    monkeypatch.setenv("STANJAX_CACHE", str(tmp_path / "cache"))
    return root


def test_nutpie_stan_takes_no_stan_front_end_and_no_threads_and_runs_every_program(broken_bridgestan):
    """``--stan`` chooses Stan's front ends, not nutpie's; nutpie_stan runs each of ``--stan-programs`` the model
    has, always on one thread a chain (its chains are threads of one process), where Stan's get the threads asked."""
    request = Request(
        suite="tiny",
        models=["dogs-dogs", LOGISTIC],
        engines=["stan", "nutpie_stan"],
        stan="bundled",
        stan_programs=["model", "expert"],
        chains=1,
        threads_per_chain=2,
    )
    jobs = plan(request)
    setups = {
        (job.model_id, job.engine, job.front_end, job.placement.program, job.placement.threads_per_chain)
        for job in jobs
    }
    assert setups == {
        ("dogs-dogs", "stan", "bundled", "", 1),
        ("dogs-dogs", "stan", "bundled", "expert", 1),
        ("dogs-dogs", "nutpie_stan", "bridgestan", "", 1),
        ("dogs-dogs", "nutpie_stan", "bridgestan", "expert", 1),
        (LOGISTIC, "stan", "bundled", "", 2),
        (LOGISTIC, "nutpie_stan", "bridgestan", "", 1),
    }
    # the bundled Stan compiles its own programs ahead; nutpie_stan's are BridgeStan's, built by its worker
    built = {(model_id, placement.program, placement.threads_per_chain) for model_id, placement in programs_for(jobs)}
    assert built == {("dogs-dogs", "", 1), ("dogs-dogs", "expert", 1), (LOGISTIC, "", 2)}


@pytest.mark.slow
def test_a_bridgestan_failure_is_the_runs_error_and_the_campaign_goes_on(broken_bridgestan, tmp_path):
    out = tmp_path / "results"
    argv = ["run", "--suite", "tiny", "--models", EIGHT_SCHOOLS, "--engines", "nutpie_stan", "numpyro"]
    assert main([*argv, "--cores", "1", "--out", str(out)]) == 1
    status = {r.engine: r for r in records.read(out)}
    assert status["nutpie_stan"].status == "error" and "planted: no compiler here" in status["nutpie_stan"].error
    assert "BridgeStan's make" in status["nutpie_stan"].error and status["numpyro"].status == "ok"
