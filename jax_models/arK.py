"""NumPyro port of posteriordb's arK (stan/arK.stan): an AR(K) regression on the series' own K lags."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def arK(K, T, y):
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([K]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    # the lags are observations, so the model takes them (no prior-predictive branch): column k - 1 of the
    # (T - K) x K lag matrix holds y[t - k] for t = K + 1..T, and every prediction is one matrix-vector product
    y = jnp.asarray(y)
    lags = jnp.stack([y[K - k : T - k] for k in range(1, K + 1)], axis=-1)
    with numpyro.plate("t", T - K):
        numpyro.sample("y", dist.Normal(alpha + lags @ beta, sigma), obs=y[K:])
