"""NumPyro port of posteriordb's arma11 (stan/arma11.stan): ARMA(1, 1) errors by a scan."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax import lax


def arma11(T, y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    phi = numpyro.sample("phi", dist.Normal(0.0, 2.0))
    # theta in (-1, 1), the invertible region, as the Stan program declares it (its spec says why)
    theta = numpyro.sample("theta", dist.TruncatedNormal(0.0, 2.0, low=-1.0, high=1.0))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    # err[t] = y[t] - mu - phi * y[t-1] - theta * err[t-1], with y[0] = mu and err[0] = 0 as the Stan program takes
    # them; the errors are a function of the observations, so the model takes them (no prior-predictive branch)
    y = jnp.asarray(y)
    innovations = y - mu - phi * jnp.concatenate([jnp.atleast_1d(mu), y[:-1]])

    def step(previous_error, innovation):
        error = innovation - theta * previous_error
        return error, error

    _, errors = lax.scan(step, jnp.zeros_like(mu), innovations)
    numpyro.factor("errors", dist.Normal(0.0, sigma).log_prob(errors).sum())
