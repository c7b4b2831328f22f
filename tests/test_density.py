"""Each pair targets the same posterior: log densities differ by one constant, gradients agree.

Parametrised over the registry, so a new model is covered without a new test. The planted-mismatch test
checks that the check itself can fail."""

import pytest

import jax_models
import models
from runner import density

SPECS = list(models.registry().values())
N_POINTS = 5


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_stan_and_numpyro_log_densities_differ_by_a_constant(spec):
    data = spec.data("tiny", seed=1)
    result = density.check(spec, data, density.prior_points(spec, data, N_POINTS, seed=0))
    assert len(result.log_density_stan) == N_POINTS
    assert result.max_offset_spread <= density.RELATIVE_TOLERANCE, result.offsets
    assert result.same_transforms == (not spec.different_transforms)
    if result.same_transforms:
        assert result.max_gradient_error <= 1e-6
    assert result.ok


THREADED = [s for s in SPECS if s.stan_threaded_file]


@pytest.mark.parametrize("grainsize", [1, 3])
@pytest.mark.parametrize("spec", THREADED, ids=[s.id for s in THREADED])
def test_threaded_programs_give_the_same_density(spec, grainsize):
    """The reduce_sum variant, at grainsize 1 (the scheduler splits) and 3 (slices that do not divide N)."""
    data = spec.data("tiny", seed=1)
    result = density.check(spec, data, density.prior_points(spec, data, N_POINTS, seed=0), grainsize=grainsize)
    assert result.max_offset_spread <= density.RELATIVE_TOLERANCE, result.offsets
    if result.same_transforms:
        assert result.max_gradient_error <= 1e-6
    assert result.ok


def test_a_planted_prior_change_is_detected(monkeypatch):
    """mu's prior widened from normal(0, 5) to normal(0, 6) in the NumPyro model of eight schools, its Stan program
    left as compiled: the pair no longer targets the same posterior, and the check must say so."""
    import numpyro.distributions as dist
    from numpyro.primitives import Messenger

    class WidenMusPrior(Messenger):
        def process_message(self, msg):
            if msg["name"] == "mu":
                assert isinstance(msg["fn"], dist.Normal) and float(msg["fn"].scale) == 5.0, msg["fn"]
                msg["fn"] = dist.Normal(0.0, 6.0)

    spec = models.get("eight_schools-eight_schools_noncentered")
    data = spec.data("tiny", seed=1)
    points = density.prior_points(spec, data, N_POINTS, seed=0)
    load = jax_models.load
    monkeypatch.setattr(jax_models, "load", lambda name: WidenMusPrior(load(name)))
    result = density.check(spec, data, points)
    assert result.max_offset_spread > density.RELATIVE_TOLERANCE
    assert result.max_gradient_error > 1e-6
    assert not result.ok
