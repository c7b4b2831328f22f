"""The regimes issue 46 adds (an ODE, a hidden Markov model, a Bayesian neural network): their sizes, posteriordb's
data and reference where they apply, both engines' means against posteriordb's reference posterior at default size,
and a network judged by its held-out predictions."""

import numpy as np
import pytest

import stanjax as sj
from stanjax import models
from stanjax.models import SizeError
from stanjax.runner.commands.cli import main
from stanjax.runner.core import records
from stanjax.runner.measure import plan, references
from stanjax.runner.measure.metrics import held_out_lpd

HMM, LOTKA_VOLTERRA = "hmm_example-hmm_example", "hudson_lynx_hare-lotka_volterra"
BNN = "curve_synth-bayesian_neural_network"
LIMIT_SD = 0.1  # the issue's: every mean within 0.1 posterior sd of posteriordb's


@pytest.mark.parametrize("model_id", [HMM, LOTKA_VOLTERRA])
def test_posteriordbs_data_and_reference_hold_at_default_and_data_of_the_model_elsewhere(model_id):
    spec = models.get(model_id)
    published = spec.data("default", seed=1)
    assert models.data_hash(published) == models.data_hash(spec.data("default", seed=7))  # fixed: the seed is unused
    for size in ("tiny", "small", "large"):
        data = spec.data(size, seed=1)
        assert data["N"] == spec.sizes[size]["N"] and models.data_hash(data) != models.data_hash(published)
        assert models.data_hash(spec.data(size, seed=2)) != models.data_hash(data)  # drawn: the seed matters
        _, source = references.applicable(model_id, size, (), models.data_hash(data))
        assert not source.startswith(references.OUTSIDE_TRUTH), source
    reference, source = references.applicable(model_id, "default", (), models.data_hash(published))
    assert source.startswith(f"{references.OUTSIDE_TRUTH}: posteriordb reference draws"), source
    assert set(reference["parameters"]) == {
        f"{p.name}[{i + 1}]" for p in spec.parameters for i in range(p.resolve_shape(published)[0])
    }
    with pytest.raises(SizeError, match="posteriordb's data set has N"):
        spec.generate(1, N=spec.sizes["default"]["N"] + 1, posteriordb_data=1)


def test_the_ode_models_tolerances_are_data_published_in_runs_and_tight_in_the_density_comparison():
    spec = models.get(LOTKA_VOLTERRA)
    default, tiny, compared = spec.data("default", 1), spec.data("tiny", 1), spec.density_data("tiny", 1)
    for runs in (default, tiny):  # what the runs solve at, every size
        assert (runs["rel_tol"], runs["abs_tol"], runs["max_num_steps"]) == (1e-5, 1e-3, 500)
    assert compared["rel_tol"] == compared["abs_tol"] == 1e-10  # the density comparison's, on the same data
    assert compared["y"].tolist() == tiny["y"].tolist()
    assert default["y"].shape == (20, 2) and default["y_init"].tolist() == [30.0, 4.0]  # the 1900 pelts


def test_the_hmm_draws_its_series_from_the_two_state_chain_it_fits():
    """A long series has the chain's stationary share in each state's neighbourhood and its locations as means."""
    spec = models.get(HMM)
    y = spec.data("large", seed=3)["y"]
    high = y > 5.9  # halfway between the locations 3.0 and 8.8, each emitted with sd 1
    stationary_high = 0.33 / (0.33 + 0.07)  # out of state 1 at 0.33, back at 0.07
    assert abs(high.mean() - stationary_high) < 0.05
    assert abs(y[high].mean() - 8.8) < 0.1 and abs(y[~high].mean() - 3.0) < 0.15
    assert np.mean(high[1:] == high[:-1]) > 0.85  # the states persist


def test_the_networks_held_out_points_lie_between_its_training_inputs_on_the_same_curve():
    data = models.get(BNN).data("default", seed=1)
    X, X_test = data["X"], data["X_test"]
    assert X.shape == (200, 3) and X_test.shape == (25, 3) and data["H"] == 15
    for inputs in (X, X_test):  # the powers 1, x, x^2 of one input
        assert np.all(inputs[:, 0] == 1.0) and np.allclose(inputs[:, 2], inputs[:, 1] ** 2)
    x, x_test = X[:, 1], X_test[:, 1]
    assert x.min() < x_test.min() and x_test.max() < x.max() and not np.isin(x_test, x).any()
    assert abs(data["y"].mean()) < 1e-12 and abs(data["y"].std() - 1.0) < 1e-12
    # held out from the same noisy curve, on the training observations' scale (noise sd ~0.1 there)
    assert np.max(np.abs(data["y_test"] - np.interp(x_test, x, data["y"]))) < 0.6


def test_the_held_out_lpd_sums_the_logs_of_the_mean_likelihoods_with_their_delta_method_error():
    means = {"lik_test[1]": 0.5, "lik_test[2]": 0.25, "mu_test[1]": 3.0}
    mcses = {"lik_test[1]": 0.01, "lik_test[2]": 0.005, "mu_test[1]": 0.1}
    lpd, mcse = held_out_lpd(means, mcses)
    assert lpd == pytest.approx(np.log(0.5) + np.log(0.25))
    assert mcse == pytest.approx(np.hypot(0.01 / 0.5, 0.005 / 0.25))  # the relative errors, mu_test's left out
    with pytest.raises(ValueError, match="lik_test"):
        held_out_lpd({"mu_test[1]": 3.0}, {"mu_test[1]": 0.1})


@pytest.mark.slow
def test_the_network_is_judged_by_its_held_out_predictions_and_its_weights_r_hat_only_recorded(tmp_path):
    """Its weights swap and flip between copies of every mode: the run's summaries and gates are of the held-out
    quantities alone, the weights' largest R-hat beside the R-hat gate, not gated."""
    spec = models.get(BNN)
    run = sj.sample(BNN, engine="numpyro", size="tiny", chains=2, warmup=200, draws=200, out=tmp_path)
    record = run.record
    n_test = spec.data("tiny", seed=1)["N_test"]
    judged = {f"{name}[{j + 1}]" for name in ("mu_test", "lik_test") for j in range(n_test)}
    assert set(record.metrics.posterior_mean) == judged and record.metrics.n_parameters == 2 * n_test
    not_gated = record.gates["rhat"]["parameters_not_gated"]
    assert not_gated["gated"] is False and not_gated["max_rhat"] >= 1.0
    assert record.gates["rhat"]["max_rhat"] == record.metrics.max_rhat  # the gate's R-hat: the quantities'
    lpd, mcse = held_out_lpd(record.metrics.posterior_mean, record.metrics.posterior_mcse)
    assert np.isfinite(lpd) and 0 < mcse < 1


# The campaign's sampler entropy, fixed here, and both sides built for one instruction set (SSE4.2, no AVX: the
# same machine code on every x86-64 host), so that this test draws the same run on every machine. Built for the
# host instead, CI's Intel Xeon drew a Stan run on the ODE whose means were right but whose R-hat and ESS failed
# the gates (one run), where 40 runs of the same setting on the AMD EPYC all passed (max R-hat 1.009, min bulk
# ESS 743, 2026-11-26): a chance failure of one run in a test would fail CI at random. Validity over fresh seeds
# on each machine's own build is what the campaigns under results/ measure.
ENTROPY = 20261126


@pytest.mark.slow
@pytest.mark.stan
@pytest.mark.zoo  # posteriordb's size: 20-50 s a run
@pytest.mark.parametrize("model_id", [HMM, LOTKA_VOLTERRA])
@pytest.mark.parametrize("engine", ["stan", "numpyro"])
def test_both_engines_find_posteriordbs_means_at_default_size(model_id, engine, tmp_path, monkeypatch):
    """One run of 4 x 1000 draws (MCSE ~0.03 sd) on posteriordb's data: valid, and every mean within 0.1 of
    posteriordb's reference sds of its reference mean (`benchmarks/outside_truth.py` checks the campaign's runs)."""
    monkeypatch.setattr(plan, "campaign_entropy", lambda: ENTROPY)
    argv = ["run", "--models", model_id, "--engines", engine, "--size", "default", "--repeats", "1"]
    assert main([*argv, "--isa", "x86-64-v2", "--out", str(tmp_path)]) == 0
    [record] = records.read(tmp_path)
    assert record.isa == "x86-64-v2" and record.valid, record.failed_gates
    truth = models.get(model_id).ground_truth("default")["parameters"]
    distances = {
        name: abs(record.metrics.posterior_mean[name] - ref["mean"]) / ref["sd"] for name, ref in truth.items()
    }
    assert max(distances.values()) < LIMIT_SD, distances
