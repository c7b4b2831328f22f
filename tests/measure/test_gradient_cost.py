"""Gradient costs measured before any sampling, in a fresh process: each side on both clocks (a compiled loop, and
inside its NUTS), every measurement saying which."""

import json

import pytest

from stanjax.models import UnknownChoice, UsageError
from stanjax.runner.measure import gradient_clocks, gradient_cost

LOGISTIC = "covtype_synth-logistic_regression"


def test_a_jax_gradient_is_timed_inside_a_compiled_loop_and_grows_with_the_data():
    """Two N 100x apart: the cost grows with N; and the per-gradient time does not fall as the loop grows 8x (a
    gradient XLA hoisted out of the loop, computed once, would make it fall 8x); tries keep the fastest."""
    cpu = {"JAX_PLATFORMS": "cpu"}
    small = gradient_cost.measure("jax", LOGISTIC, "tiny", 300, env=cpu, options=("--tries", "3"))
    large, longer = (
        gradient_cost.measure("jax", LOGISTIC, "tiny", 30_000, env=cpu, options=("--repeats", str(repeats)))
        for repeats in (50, 400)
    )
    assert small["sizes"] == {"N": 300, "D": 5} and large["sizes"] == {"N": 30_000, "D": 5}
    assert large["ms_per_gradient"] > 5 * small["ms_per_gradient"] > 0
    # a hoisted gradient falls 8x (13x when planted); beside the suite's other worker the honest one moved up to 3x
    assert longer["ms_per_gradient"] > large["ms_per_gradient"] / 6 and longer["repeats"] == 400
    assert large["compile_s"] > 0 and large["device"] == "cpu" and large["precision"] == "float64"
    # unless fixed, a loop of a small gradient is lengthened until it is long enough to time
    assert small["repeats"] > gradient_clocks.LOOP_REPEATS
    assert small["repeats"] * small["ms_per_gradient"] / 1e3 > gradient_clocks.LOOP_MIN_S / 2
    # tries on fresh copies of the inputs: the fastest is the measurement (the calibration's statistic)
    assert (
        len(small["tries_ms"]) == 3 and small["ms_per_gradient"] == min(small["tries_ms"]) and "tries_ms" not in large
    )


@pytest.mark.stan
def test_a_stan_gradient_is_timed_inside_its_nuts_and_grows_with_the_data():
    small, large = (gradient_cost.measure("stan", LOGISTIC, "tiny", n) for n in (300, 30_000))
    assert small["leapfrog_steps"] > 300 and large["leapfrog_steps"] > 300  # 300 iterations, >= 1 step each
    assert large["ms_per_gradient"] > 5 * small["ms_per_gradient"] > 0
    assert large["threads"] == 1 and large["side"] == "stan" and large["clock"] == "nuts"


@pytest.mark.stan
def test_a_stan_gradient_is_timed_in_a_compiled_loop_as_jaxs_is_and_grows_with_the_data():
    """Stan's loop clock (its C++ driver, at JAX's point): the cost grows with N, a small gradient's loop is
    lengthened as JAX's is, fixed repeats stay fixed, tries keep the fastest; where the gradient is most of a
    leapfrog step (30,000 rows), inside its NUTS costs about what the loop does (a clock that divided by the draws,
    not the leapfrog steps, or that skipped the gradient, would not)."""
    loop = ("--clock", "loop")
    small = gradient_cost.measure("stan", LOGISTIC, "tiny", 300, options=loop)
    large = gradient_cost.measure("stan", LOGISTIC, "tiny", 30_000, options=(*loop, "--repeats", "50", "--tries", "2"))
    nuts = gradient_cost.measure("stan", LOGISTIC, "tiny", 30_000, options=("--clock", "nuts"))
    assert small["clock"] == large["clock"] == "loop" and nuts["clock"] == "nuts"
    assert small["sizes"] == {"N": 300, "D": 5} and large["sizes"] == {"N": 30_000, "D": 5}
    assert large["ms_per_gradient"] > 5 * small["ms_per_gradient"] > 0
    assert small["repeats"] > gradient_clocks.LOOP_REPEATS and large["repeats"] == 50
    assert small["repeats"] * small["ms_per_gradient"] / 1e3 > gradient_clocks.LOOP_MIN_S / 2
    assert len(large["tries_ms"]) == 2 and large["ms_per_gradient"] == min(large["tries_ms"])
    assert 0.5 < nuts["ms_per_gradient"] / large["ms_per_gradient"] < 2.5  # 1.36 here
    assert "log_prob_grad<true, true>" in large["how"] and large["program"] == "" and large["threads"] == 1


def test_a_jax_gradient_is_timed_inside_numpyros_nuts_and_grows_with_the_data():
    """JAX's NUTS clock (NumPyro's sampling phase ÷ its leapfrog steps, trees of depth <= 3): the cost grows with N,
    and where the gradient is most of a leapfrog step it costs about what the compiled loop does."""
    cpu, nuts = {"JAX_PLATFORMS": "cpu"}, ("--clock", "nuts")
    small, large = (gradient_cost.measure("jax", LOGISTIC, "tiny", n, env=cpu, options=nuts) for n in (300, 30_000))
    loop = gradient_cost.measure("jax", LOGISTIC, "tiny", 30_000, env=cpu)
    assert small["clock"] == large["clock"] == "nuts" and loop["clock"] == "loop"
    assert large["ms_per_gradient"] > 5 * small["ms_per_gradient"] > 0
    assert small["leapfrog_steps"] > 300 and large["compile_s"] > 0  # 10 + 40 or more draws, up to 7 steps each
    assert 0.5 < large["ms_per_gradient"] / loop["ms_per_gradient"] < 2.5  # 1.27 here; 3.1 counting draws
    assert "NumPyro's sampling clock" in large["how"]


def test_every_measurement_says_its_clock_and_older_ones_read_as_the_clock_they_were(monkeypatch):
    """A measurement without a clock (made before there were two) is Stan's NUTS or JAX's loop, the setups'
    lookups read it so; the clocks of one side are measured in processes of their own (Stan's NUTS forks, a process
    that started JAX for the loop's point must not); a NUTS clock takes no loop's sizing, and no clock but the two."""
    setup = {"side": "stan", "model_id": LOGISTIC, "size": "tiny", "sizes": {"N": 200, "D": 5}, "device": "cpu"}
    setup |= {"precision": "float64", "chains": 1, "threads": 1}
    assert gradient_clocks.clock_of(setup) == "nuts" and gradient_clocks.clock_of({**setup, "side": "jax"}) == "loop"
    assert gradient_cost.setup_key(setup) == gradient_cost.setup_key({**setup, "clock": "nuts"})
    assert gradient_cost.setup_key(setup) != gradient_cost.setup_key({**setup, "clock": "loop"})
    batches = []

    def run_module(module, args, env, timeout_s):
        batches.append(json.loads(args[1]))
        return type("Done", (), {"stdout": "", "returncode": 0, "stderr": ""})()

    monkeypatch.setattr(gradient_cost.environment, "run_module", run_module)
    clocks = [{**setup, "side": side, "clock": clock} for side in ("stan", "jax") for clock in ("loop", "nuts")]
    gradient_cost.measure_setups([*clocks, setup], say=lambda _: None)
    assert sorted((b[0]["side"], gradient_clocks.clock_of(b[0]), len(b)) for b in batches) == [
        ("jax", "loop", 1),
        ("jax", "nuts", 1),
        ("stan", "loop", 1),
        ("stan", "nuts", 1),  # the clockless setup is this one
    ]
    with pytest.raises(UsageError, match="the nuts clock runs a sampler"):
        gradient_cost.cost("jax", "nuts", LOGISTIC, "tiny", repeats=10)
    with pytest.raises(UnknownChoice):
        gradient_cost.cost("jax", "wall", LOGISTIC, "tiny")


def test_a_bad_measurement_says_why_in_one_line():
    with pytest.raises(RuntimeError, match="gradient cost jax no-such-model tiny failed"):
        gradient_cost.measure("jax", "no-such-model", "tiny")


def test_setups_are_measured_a_process_per_side_device_and_precision_and_a_failure_is_said():
    """The GPU campaign's calibration: equal setups once; a setup this machine cannot measure (a GPU one here) is
    said and left out, the others measured."""
    setup = {
        "side": "jax",
        "model_id": LOGISTIC,
        "size": "tiny",
        "sizes": {"N": 200, "D": 5},
        "device": "cpu",
        "precision": "float64",
        "chains": 4,
        "threads": 1,
    }
    said = []
    rows = gradient_cost.measure_setups([setup, dict(setup), {**setup, "device": "gpu"}], say=said.append)
    (row,) = rows
    assert gradient_cost.setup_key(row) == gradient_cost.setup_key(setup) and row["ms_per_gradient"] > 0
    assert row["chains"] == 4 and row["size"] == "tiny"
    assert len(said) == 2 and "FAILED" in said[1] and " gpu " in said[1]


def test_a_measuring_suite_starts_with_a_calibration_under_its_campaign_id(tmp_path, monkeypatch, capsys):
    """quick (and full, nightly) calibrate first, into OUT/measurements.jsonl under the campaign's ID; tiny does not
    unless asked; a failed calibration is said and the campaign goes on."""
    from stanjax.runner.commands import run
    from stanjax.runner.commands.cli import main
    from stanjax.runner.core import records
    from stanjax.runner.measure import run_length

    started = []
    monkeypatch.setattr(run, "run_jobs", lambda jobs, out, *a, campaign_id=None, **k: started.append(campaign_id) or [])
    monkeypatch.setattr(run_length, "for_campaign", lambda jobs, min_s, keep: (jobs, []))
    fake = [
        {"side": side, "model_id": LOGISTIC, "sizes": {"N": 2000, "D": 20}, "ms_per_gradient": 0.02}
        for side in ("stan", "jax")
    ]
    quiet = {"other_processes_cores": 0.0, "other_processes_share": 0.0, "loaded": False}
    monkeypatch.setattr(gradient_cost, "calibrate", lambda cpus: (fake, quiet))
    eight = ["--models", "eight_schools-eight_schools_noncentered"]
    assert main(["run", "--suite", "quick", *eight, "--out", str(tmp_path / "q")]) == 0
    (m,) = records.read_measurements(tmp_path / "q" / records.MEASUREMENTS_FILE)
    assert m["measure"] == "calibration" and m["campaign_id"] == started[0] and m["sides"] == fake
    assert m["load"] == quiet
    assert (
        "calibration (covtype_synth-logistic_regression, small, one core): stan 0.0200 ms, jax 0.0200 ms"
        in capsys.readouterr().out
    )
    assert main(["run", "--suite", "tiny", *eight, "--engines", "stan", "--out", str(tmp_path / "t")]) == 0
    assert not (tmp_path / "t" / records.MEASUREMENTS_FILE).exists() and started[1] is None

    def broken(cpus):
        raise RuntimeError("gradient cost stan covtype small failed: ['no compiler']")

    monkeypatch.setattr(gradient_cost, "calibrate", broken)
    assert (
        main(["run", "--suite", "tiny", *eight, "--engines", "stan", "--calibrate", "--out", str(tmp_path / "b")]) == 0
    )
    assert "calibration failed (gradient cost stan covtype small failed" in capsys.readouterr().out


@pytest.mark.stan
def test_the_calibration_takes_each_sides_fastest_try_and_says_what_else_ran_beside_it():
    (stan, jax), load = gradient_cost.calibrate()
    assert len(stan["runs_ms"]) == 3 and stan["ms_per_gradient"] == min(stan["runs_ms"])
    assert len(jax["tries_ms"]) == gradient_cost.CALIBRATION_JAX_TRIES and jax["ms_per_gradient"] == min(
        jax["tries_ms"]
    )
    assert jax["side"] == "jax" and jax["threads"] == 1 and jax["cpu_threads"] == 1  # one core
    assert stan["clock"] == "nuts" and jax["clock"] == "loop"  # as every calibration before: machines stay comparable
    assert {"other_processes_cores", "other_processes_share", "loaded"} <= set(load)


def test_a_long_jax_loop_stays_where_it_started():
    """Each gradient of the loop is taken near the starting point: moves accumulated over 5,000 steps carried
    Lotka-Volterra's parameters where its ODE is stiff and its gradient cost 600x (7-8 ms against 0.013)."""
    cpu = {"JAX_PLATFORMS": "cpu"}
    short, long = (
        gradient_cost.measure(
            "jax", "hudson_lynx_hare-lotka_volterra", "default", env=cpu, options=("--repeats", str(repeats))
        )
        for repeats in (200, 5_000)
    )
    assert long["repeats"] == 5_000 and long["ms_per_gradient"] < 5 * short["ms_per_gradient"]
