"""Stan's gradient loop (runner/engines/stan_loop.py): a C++ driver built by the bundled Stan's toolchain whose log
density and gradient are the bundled module's own at the loop clock's point, and whose build says what failed."""

import numpy as np
import pytest

from stanjax import models
from stanjax.runner.core.config import RunConfig
from stanjax.runner.engines import stan_loop
from stanjax.runner.measure import gradient_clocks

# ordered, positive and interval parameters: each unconstrained by Stan's transforms (NumPyro's are others' code)
MIXTURE = "low_dim_gauss_mix-low_dim_gauss_mix"
# the driver's gradient, and a driver that skips it: the same log density (propto, Jacobian), a gradient of zeros
GRADIENT = "stan::model::log_prob_grad<true, true>(*model, z, gradient, nullptr)"
SKIPS_THE_GRADIENT = "(gradient.setZero(), stan::model::log_prob_propto<true>(*model, z, nullptr))"


def flattened(spec, point: dict) -> np.ndarray:
    """Constrained values in Stan's order: each parameter column-major, in declaration order."""
    return np.concatenate([np.ravel(np.asarray(point[p.name]), order="F") for p in spec.parameters])


@pytest.mark.stan
def test_the_loops_log_density_and_gradient_are_the_bundled_modules_at_jaxs_point(monkeypatch):
    """At the loop clock's point (JAX's start, constrained, then unconstrained by Stan's own transforms) the driver's
    log density (propto, Jacobian) and gradient equal httpstan's ``log_prob`` and ``log_prob_grad`` of the module
    the bundled engine samples, to 1e-10; its unconstrained point is the module's ``transform_inits`` of the
    point, which the module's ``write_array`` takes back to JAX's constrained point (both sides at one point). A
    planted driver that skips the gradient fails."""
    import httpstan.models

    from stanjax.runner.engines.stan_bundled import HttpstanBackend

    spec = models.get(MIXTURE)
    data = spec.data("tiny", RunConfig().data_seed())
    point = gradient_clocks.stan_point(spec, data, (), "tiny")
    module = httpstan.models.import_services_extension_module(HttpstanBackend().compile(spec.stan_file)["model_name"])

    def matches(driver) -> bool:
        found = stan_loop.at_point(driver, data, point)
        unconstrained = list(found.unconstrained)
        np.testing.assert_allclose(
            found.unconstrained, module.transform_inits(data, {k: v.tolist() for k, v in point.items()}), rtol=1e-12
        )
        np.testing.assert_allclose(module.write_array(data, unconstrained, False, False), flattened(spec, point))
        assert found.log_density == pytest.approx(module.log_prob(data, unconstrained, True), rel=1e-10, abs=1e-10)
        reference = np.asarray(module.log_prob_grad(data, unconstrained, True))
        return bool(np.all(reference != 0) and np.allclose(found.gradient, reference, rtol=1e-10, atol=1e-10))

    built = stan_loop.build(spec.stan_file)
    assert built.program == "low_dim_gauss_mix.stan" and stan_loop.build(spec.stan_file).cached
    assert matches(built)
    assert stan_loop.DRIVER.count(GRADIENT) == 2  # at the point and in the loop
    planted = "#include <stan/model/log_prob_propto.hpp>\n" + stan_loop.DRIVER.replace(GRADIENT, SKIPS_THE_GRADIENT)
    monkeypatch.setattr(stan_loop, "DRIVER", planted)
    assert not matches(stan_loop.build(spec.stan_file))


@pytest.mark.stan
def test_a_driver_that_does_not_build_is_one_line_naming_the_program(tmp_path, monkeypatch):
    """A program stanc refuses, and a driver the compiler refuses (a planted syntax error), each say so in one
    line naming the program; neither leaves a driver in the cache."""
    bad = tmp_path / "broken.stan"
    bad.write_text("parameters { real x; } model { x ~ normal(0, 1) }\n")  # no semicolon
    with pytest.raises(RuntimeError, match=r"^broken\.stan failed to translate: ") as refused:
        stan_loop.build(bad)
    assert "\n" not in str(refused.value)
    good = tmp_path / "fine.stan"
    good.write_text("parameters { real x; } model { x ~ normal(0, 1); }\n")
    monkeypatch.setattr(stan_loop, "DRIVER", stan_loop.DRIVER + "\nint planted syntax error\n")
    with pytest.raises(RuntimeError, match=r"^fine\.stan: its gradient loop failed to build: .*error") as failed:
        stan_loop.build(good)
    assert "\n" not in str(failed.value)
    assert not list((stan_loop.cache_dir() / stan_loop.CACHE_FOLDER).glob("fine-*/driver"))
