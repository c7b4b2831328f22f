"""NumPyro port of posteriordb's garch11 (stan/garch11.stan): GARCH(1, 1), beta1 a share of its bound (the program's
one change), volatilities by a scan."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax import lax
from numpyro.distributions import constraints


def garch11(T, y, sigma1):
    mu = numpyro.sample("mu", dist.ImproperUniform(constraints.real, (), ()))
    alpha0 = numpyro.sample("alpha0", dist.ImproperUniform(constraints.positive, (), ()))
    alpha1 = numpyro.sample("alpha1", dist.ImproperUniform(constraints.unit_interval, (), ()))
    beta1_share = numpyro.sample("beta1_share", dist.ImproperUniform(constraints.unit_interval, (), ()))
    beta1 = numpyro.deterministic("beta1", (1.0 - alpha1) * beta1_share)
    numpyro.factor("beta1_jacobian", jnp.log1p(-alpha1))
    y = jnp.asarray(y)
    shocks = alpha0 + alpha1 * jnp.square(y[:-1] - mu)

    def step(previous_variance, shock):
        variance = shock + beta1 * previous_variance
        return variance, variance

    _, variances = lax.scan(step, jnp.zeros_like(mu) + jnp.square(sigma1), shocks)
    sigma = jnp.concatenate([jnp.atleast_1d(jnp.zeros_like(mu) + sigma1), jnp.sqrt(variances)])
    with numpyro.plate("t", T):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)
