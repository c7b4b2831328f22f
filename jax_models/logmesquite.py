"""NumPyro port of posteriordb's logmesquite (stan/logmesquite.stan): log weight on log sizes, flat priors."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def logmesquite(N, weight, diam1, diam2, canopy_height, total_height, density, group):
    # the program declares no priors: beta and sigma are flat (improper) on their supports
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (7,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    # the program's transformed data: the log predictors, and group as it is
    X = jnp.stack(
        [jnp.log(diam1), jnp.log(diam2), jnp.log(canopy_height), jnp.log(total_height), jnp.log(density), group],
        axis=-1,
    )
    with numpyro.plate("N", N):
        numpyro.sample("log_weight", dist.Normal(beta[0] + X @ beta[1:], sigma), obs=jnp.log(weight))
