"""NumPyro port of posteriordb's logmesquite_logvash (stan/logmesquite_logvash.stan): log weight on log canopy volume,
area and shape and log height, flat priors."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def logmesquite_logvash(N, weight, diam1, diam2, canopy_height, total_height, group):
    # the program declares no priors: beta and sigma are flat (improper) on their supports
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (6,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    # the program's transformed data: log canopy volume, area and shape, log total height
    X = jnp.stack(
        [
            jnp.log(diam1 * diam2 * canopy_height),
            jnp.log(diam1 * diam2),
            jnp.log(diam1 / diam2),
            jnp.log(total_height),
            group,
        ],
        axis=-1,
    )
    with numpyro.plate("N", N):
        numpyro.sample("log_weight", dist.Normal(beta[0] + X @ beta[1:], sigma), obs=jnp.log(weight))
