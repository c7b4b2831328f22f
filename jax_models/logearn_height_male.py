"""NumPyro port of posteriordb's logearn_height_male (stan/logearn_height_male.stan): log earnings on height and sex."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def logearn_height_male(N, earn, height, male):
    # no prior in the published program: flat on beta, flat on sigma > 0 (improper, as Stan's)
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (3,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    mu = beta[0] + beta[1] * height + beta[2] * male
    with numpyro.plate("N", N):
        numpyro.sample("log_earn", dist.Normal(mu, sigma), obs=jnp.log(earn))
