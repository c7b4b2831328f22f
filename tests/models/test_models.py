"""Every registered model: seeded generators, data keys = the Stan data block, names shared by all three files."""

import os
import subprocess
import sys

import numpy as np
import pytest
from numpyro import handlers
from numpyro.infer import init_to_uniform

from stanjax import jax_models, models
from stanjax.runner.measure import stan_program
from tests.stan_blocks import declarations

SPECS = list(models.registry().values())
IDS = [spec.id for spec in SPECS]


def test_registry_has_the_three_first_models():
    assert {
        "eight_schools-eight_schools_noncentered",
        "covtype_synth-logistic_regression",
        "tennis_synth-bradley_terry_hierarchical",
    } <= set(IDS)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_files_exist_for_every_id(spec):
    assert spec.stan_file.exists() and spec.jax_file.exists()
    assert set(spec.sizes) == set(models.SIZE_NAMES)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_generator_is_deterministic_per_seed(spec):
    first, again = spec.data("tiny", seed=7), spec.data("tiny", seed=7)
    assert models.data_hash(first) == models.data_hash(again)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])


# In a child: NumPy's SIMD sets in use, a BLAS product's bits (proof that the kernels differ), every data hash.
DATA_BITS = (
    "import numpy as np; from stanjax import models; from numpy._core import _multiarray_umath as u; "
    "print([f for f in u.__cpu_dispatch__ if u.__cpu_features__.get(f)]); "
    "X = np.random.default_rng(0).normal(size=(1000, 3)); print(models.data_hash({'Xw': X @ np.array([0.3, -1.7, 0.9])})); "
    "print(' '.join(models.data_hash(s.data(size, seed=3)) for s in models.registry().values() "
    "for size in ('tiny', 'small')))"
)


def data_bits(**env) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", DATA_BITS],
        capture_output=True,
        text=True,
        check=True,
        cwd=models.ROOT,
        env={**os.environ, **env},
    )
    return done.stdout.splitlines()


def test_data_bits_do_not_depend_on_the_cpu():
    """Every generator gives the same data with NumPy's CPU-specific SIMD paths switched off (as on a CPU without
    them) and with another CPU's BLAS kernels (OpenBLAS's for a Pentium 4, which sum a matrix product in another
    order than this CPU's): data hashes in references and records must match on any machine."""
    from numpy._core import _multiarray_umath as umath

    here = data_bits()
    simd = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    if simd:
        scalar = data_bits(NPY_DISABLE_CPU_FEATURES=" ".join(simd))
        assert here[0] == str(simd) and scalar[0] == "[]"
        assert scalar[2] == here[2]
    other_blas = data_bits(OPENBLAS_CORETYPE="Prescott")
    assert other_blas[1] != here[1]  # the kernels do sum otherwise: the check can see a generator that uses them
    assert other_blas[2] == here[2]


@pytest.mark.parametrize("spec", [s for s in SPECS if s.id.split("-")[0].endswith("_synth")], ids=lambda s: s.id)
def test_synthetic_data_change_with_the_seed(spec):
    assert models.data_hash(spec.data("tiny", seed=1)) != models.data_hash(spec.data("tiny", seed=2))


@pytest.mark.parametrize("size", ["tiny", "default"])
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_data_keys_and_shapes_match_the_stan_data_block(spec, size):
    data = spec.data(size, seed=1)
    declared = declarations(spec.stan_file.read_text(), "data", data)
    assert set(data) == set(declared)
    for name, shape in declared.items():
        assert np.shape(data[name]) == shape, name
        if np.issubdtype(np.asarray(data[name]).dtype, np.integer):
            assert np.asarray(data[name]).dtype == np.int64


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_spec_parameters_match_stan_and_numpyro(spec):
    data = spec.data("tiny", seed=1)
    expected = {p.name: p.resolve_shape(data) for p in spec.parameters}
    sizes = stan_program.read_program(spec.stan_file).environment(data)  # a size transformed data define: diamonds' Kc
    assert declarations(spec.stan_file.read_text(), "parameters", sizes) == expected
    model = jax_models.load(spec.jax_file)
    # latent values as NUTS starts them (init_to_uniform), so a flat site with no sampler (ImproperUniform) traces
    started = handlers.substitute(handlers.seed(model, rng_seed=0), substitute_fn=init_to_uniform)
    trace = handlers.trace(started).get_trace(**data)
    latent = {
        name: site["value"].shape
        for name, site in trace.items()
        if site["type"] == "sample" and not site["is_observed"]
    }
    assert latent == expected


def test_unknown_model_and_size_name_the_choices():
    with pytest.raises(models.UnknownChoice, match="choose from: .*eight_schools"):
        models.get("nope")
    with pytest.raises(models.UnknownChoice, match="tiny, small, default, large"):
        models.get("covtype_synth-logistic_regression").size_kwargs("huge")


@pytest.mark.parametrize(
    "model_id, sizes",
    [
        ("covtype_synth-logistic_regression", {"N": 0, "D": 3}),
        ("tennis_synth-bradley_terry_hierarchical", {"n_players": 1, "n_matches": 10}),
    ],
)
def test_generators_reject_invalid_sizes(model_id, sizes):
    with pytest.raises(ValueError):
        models.get(model_id).generate(1, **sizes)


def test_large_logistic_regression_has_the_covertype_shape():
    assert models.get("covtype_synth-logistic_regression").sizes["large"] == {"N": 581_012, "D": 54}


def test_sp500_stochastic_volatility_is_the_gym_targets_posterior():
    """``gym_sp500-stochastic_volatility_sp500`` samples (persistence, first log volatility, shock scale,
    standardised innovations) in place of the target's (persistence, mean log volatility, shock scale, log
    volatilities). Its log density at prior points is the target's, written here from inference-gym's
    ``StochasticVolatility`` (centred AR(1) states), plus the log Jacobian of the map, T log(scale) -
    log(1 - persistence^2) / 2, up to one constant: the same posterior. The data are ``internal/data.py``'s
    ``sp500_returns(100)``."""
    import jax
    import jax.numpy as jnp
    import numpyro
    from numpyro.infer import Predictive
    from numpyro.infer.util import log_density
    from scipy import stats

    spec = models.get("gym_sp500-stochastic_volatility_sp500")
    data = spec.data("small", seed=0)
    closes = np.asarray(models.gym.dataset("sp500_closing_prices").CLOSING_PRICES)
    returns = np.diff(closes)[-100:]
    np.testing.assert_array_equal(data["centered_returns"], returns - np.mean(returns))
    model = jax_models.load(spec.jax_file)
    offsets = []
    numpyro.enable_x64()  # as the density check evaluates it
    prior = Predictive(model, num_samples=5, return_sites=[p.name for p in spec.parameters])(
        jax.random.PRNGKey(0), **{k: v for k, v in data.items() if k != "centered_returns"}
    )
    for point in ({name: np.asarray(draws[i], dtype=np.float64) for name, draws in prior.items()} for i in range(5)):
        ours, trace = log_density(model, (), data, {k: jnp.asarray(v) for k, v in point.items()})
        phi, scale = point["persistence_of_volatility"], point["white_noise_shock_scale"]
        mu, h = float(trace["mean_log_volatility"]["value"]), np.asarray(trace["log_volatility"]["value"])
        assert h[0] == pytest.approx(point["initial_log_volatility"])
        target = (
            stats.beta.logpdf((phi + 1) / 2, 20, 1.5)
            + stats.cauchy.logpdf(mu, 0, 5)
            + stats.halfcauchy.logpdf(scale, 0, 2)
            + stats.norm.logpdf(h[0], mu, scale / np.sqrt(1 - phi**2))
            + stats.norm.logpdf(h[1:], mu + phi * (h[:-1] - mu), scale).sum()
            + stats.norm.logpdf(data["centered_returns"], 0, np.exp(h / 2)).sum()
        )
        offsets.append(float(ours) - target - (data["T"] * np.log(scale) - np.log(1 - phi**2) / 2))
    assert np.ptp(offsets) <= 1e-8 * max(1.0, abs(offsets[0])), offsets
