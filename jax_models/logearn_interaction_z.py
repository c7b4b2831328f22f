"""NumPyro port of posteriordb's logearn_interaction_z (stan/logearn_interaction_z.stan): z-height x male."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def logearn_interaction_z(N, earn, height, male):
    # no prior in the published program: flat on beta, flat on sigma > 0 (improper, as Stan's)
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (4,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    z_height = (height - jnp.mean(height)) / jnp.std(height, ddof=1)  # standardisation (Stan's sd: N - 1)
    inter = z_height * male  # interaction
    mu = beta[0] + beta[1] * z_height + beta[2] * male + beta[3] * inter
    with numpyro.plate("N", N):
        numpyro.sample("log_earn", dist.Normal(mu, sigma), obs=jnp.log(earn))
