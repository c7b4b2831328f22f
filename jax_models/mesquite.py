"""NumPyro port of posteriordb's mesquite (stan/mesquite.stan): mesquite bushes' weight on their size, flat priors."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def mesquite(N, weight, diam1, diam2, canopy_height, total_height, density, group):
    # the program declares no priors: beta and sigma are flat (improper) on their supports
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (7,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    X = jnp.stack([diam1, diam2, canopy_height, total_height, density, group], axis=-1)
    with numpyro.plate("N", N):
        numpyro.sample("weight", dist.Normal(beta[0] + X @ beta[1:], sigma), obs=weight)
