"""NumPyro port of posteriordb's logmesquite_logvolume (stan/logmesquite_logvolume.stan): log weight on log canopy
volume, flat priors."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def logmesquite_logvolume(N, weight, diam1, diam2, canopy_height):
    # the program declares no priors: beta and sigma are flat (improper) on their supports
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (2,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    log_canopy_volume = jnp.log(diam1 * diam2 * canopy_height)  # the program's transformed data
    with numpyro.plate("N", N):
        numpyro.sample("log_weight", dist.Normal(beta[0] + beta[1] * log_canopy_volume, sigma), obs=jnp.log(weight))
