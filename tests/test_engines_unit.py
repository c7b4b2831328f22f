"""Engine internals that need no sampler run: pystan's draw layout and the JAX compile clock."""

import numpy as np
import stan.fit

from runner.engines.jax_setup import CompileClock
from runner.engines.stan import _by_chain, _parse_elapsed


def fake_pystan_fit(n_draws=5, n_chains=3):
    """A pystan Fit whose draw of beta[k] in chain c, draw d is 100*c + 10*d + k (k = 0, 1)."""
    fit = object.__new__(stan.fit.Fit)
    fit.param_names, fit.dims = ("beta",), ([2],)
    fit.constrained_param_names = ("beta.1", "beta.2")
    fit.sample_and_sampler_param_names = ("lp__",)
    fit.num_chains, fit.num_samples, fit.num_warmup, fit.num_thin, fit.save_warmup = n_chains, n_draws, 0, 1, False
    c, d, k = np.meshgrid(np.arange(n_chains), np.arange(n_draws), np.arange(2), indexing="ij")
    beta = 100 * c + 10 * d + k  # (chains, draws, 2)
    lp = -(100 * c[..., 0] + 10 * d[..., 0])
    fit._draws = np.concatenate([lp[None], np.moveaxis(beta, 2, 0)]).transpose(0, 2, 1).copy(order="F")
    return fit, beta, lp


def test_pystan_draws_are_regrouped_by_chain():
    fit, beta, lp = fake_pystan_fit()
    np.testing.assert_array_equal(_by_chain(fit, "beta", 3), beta)
    np.testing.assert_array_equal(_by_chain(fit, "lp__", 3), lp)


def test_stan_elapsed_time_report_is_parsed():
    output = (b'{"topic":"logger","values":["info: Elapsed Time: 0.125 seconds (Warm-up)"]}\n'
              b'{"topic":"logger","values":["info:                0.5 seconds (Sampling)"]}\n')
    assert _parse_elapsed(output) == {"warmup": 0.125, "sampling": 0.5}


def test_compile_clock_counts_overlapping_spans_once():
    clock = object.__new__(CompileClock)
    clock.spans = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7)]
    assert clock.seconds() == 4.0
