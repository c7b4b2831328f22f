"""NumPyro port of posteriordb's logearn_logheight_male (stan/logearn_logheight_male.stan): log-log on height, male."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def logearn_logheight_male(N, earn, height, male):
    # no prior in the published program: flat on beta, flat on sigma > 0 (improper, as Stan's)
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (3,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    mu = beta[0] + beta[1] * jnp.log(height) + beta[2] * male
    with numpyro.plate("N", N):
        numpyro.sample("log_earn", dist.Normal(mu, sigma), obs=jnp.log(earn))
