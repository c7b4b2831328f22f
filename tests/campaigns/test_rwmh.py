"""Random-walk Metropolis: the key advances every step, and the chains sample the mixture."""

import jax
import numpy as np
import pytest

from stanjax.runner.campaigns import rwmh

N_CHAINS, N_STEPS = 256, 4000


@pytest.fixture(scope="module")
def jax_draws():
    jax.config.update("jax_enable_x64", True)
    run = jax.jit(rwmh.rwmh_jax, static_argnums=(2, 3))
    draws, acceptance = run(jax.random.PRNGKey(0), np.zeros(N_CHAINS), N_STEPS, 2.5)
    return np.asarray(draws), float(acceptance)


def test_consecutive_moves_differ(jax_draws):
    """With a key that never advances, every accepted move of a chain would be the same step."""
    draws, _ = jax_draws
    moves = np.diff(draws[:, 0])
    accepted = moves[moves != 0]
    assert len(accepted) > 100
    assert len(np.unique(accepted)) == len(accepted)
    assert not np.allclose(draws[1:, 0], draws[1, 0])  # the chain moves on after its first step


def test_chains_differ_from_each_other(jax_draws):
    draws, _ = jax_draws
    assert len(np.unique(draws[-1])) == N_CHAINS


@pytest.mark.parametrize("engine", ["jax", "numpy"])
def test_draws_have_the_mixture_moments(engine, jax_draws):
    if engine == "jax":
        draws, acceptance = jax_draws
    else:
        draws, acceptance = rwmh.rwmh_numpy(0, np.zeros(N_CHAINS), N_STEPS, 2.5)
    kept = draws[N_STEPS // 4 :]
    mean, variance = rwmh.mixture_moments()
    # 256 chains x 3000 draws with autocorrelation: the mean's Monte Carlo error is ~0.02
    assert abs(kept.mean() - mean) < 0.1
    assert abs(kept.var() / variance - 1) < 0.05
    assert 0.2 < acceptance < 0.8


def test_jax_and_numpy_log_densities_agree():
    jax.config.update("jax_enable_x64", True)
    x = np.linspace(-20, 20, 101)
    np.testing.assert_allclose(np.asarray(rwmh.mixture_logdensity_jax(x)), rwmh.mixture_logdensity_numpy(x), rtol=1e-12)
