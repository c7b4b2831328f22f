"""The one metrics path: arviz diagnostics and the derived rates, on draws with known behaviour."""

import numpy as np
import pytest

from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings
from stanjax.runner.measure.metrics import summarise


def result(draws, n_leapfrog=7, warmup_gradients=None, divergent_draws=0):
    chains, n = next(iter(draws.values())).shape[:2]
    divergent = np.zeros((chains, n), dtype=bool)
    divergent.flat[:divergent_draws] = True
    return SampleResult(
        draws=draws,
        timings=Timings(compile_s=3.0, warmup_s=1.5, sampling_s=2.0, user_s=4.0, source="test"),
        stats=SamplerStats(
            n_leapfrog=np.full((chains, n), n_leapfrog), divergent=divergent, warmup_gradients=warmup_gradients
        ),
        info={},
    )


def test_independent_draws_have_full_ess_and_unit_rhat():
    rng = np.random.default_rng(0)
    m = summarise(result({"a": rng.normal(size=(4, 1000)), "b": rng.normal(size=(4, 1000, 3))}), ["a", "b"])
    assert m.n_parameters == 4
    assert 3000 < m.min_ess_bulk < 5000
    assert m.max_rhat < 1.01
    assert m.ess_per_s == pytest.approx(m.min_ess_bulk / 4.0)  # the user clock, compile excluded
    assert m.ms_per_gradient == pytest.approx(1000 * 4.0 * (2.0 / 3.5) / (4 * 1000 * 7))  # sampling's user share
    assert m.gradients_sampling == 28000
    assert set(m.posterior_mean) == {"a", "b[1]", "b[2]", "b[3]"}


def test_a_chain_stuck_elsewhere_shows_in_rhat_and_ess():
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(4, 500))
    draws[3] += 3.0
    m = summarise(result({"x": draws}), ["x"])
    assert m.max_rhat > 1.1
    assert m.min_ess_bulk < 200
    assert m.worst_parameter == "x"


def test_autocorrelated_draws_lower_ess_and_only_named_parameters_count():
    rng = np.random.default_rng(2)
    noise = rng.normal(size=(4, 2000))
    ar = np.zeros_like(noise)
    for t in range(1, noise.shape[1]):
        ar[:, t] = 0.95 * ar[:, t - 1] + noise[:, t]
    m = summarise(result({"slow": ar, "fast": noise}), ["slow"])
    assert m.n_parameters == 1 and m.min_ess_bulk < 800


def test_divergences_are_counted():
    rng = np.random.default_rng(3)
    assert summarise(result({"a": rng.normal(size=(2, 100))}, divergent_draws=5), ["a"]).divergences == 5


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # arviz on a constant and a NaN draw
def test_a_constant_parameter_makes_the_diagnostics_nan_not_dropped():
    """nanmax/nanmin would drop the constant parameter and report the healthy one's diagnostics."""
    rng = np.random.default_rng(4)
    m = summarise(result({"ok": rng.normal(size=(4, 500)), "stuck": np.ones((4, 500))}), ["ok", "stuck"])
    assert np.isnan(m.max_rhat)  # a constant parameter: R-hat is 0/0
    broken = rng.normal(size=(4, 500))
    broken[2, 7] = np.nan
    m = summarise(result({"ok": rng.normal(size=(4, 500)), "broken": broken}), ["ok", "broken"])
    assert np.isnan(m.min_ess_bulk) and np.isnan(m.min_ess_tail) and m.worst_parameter == "broken"
