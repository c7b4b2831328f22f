"""NumPyro port of posteriordb's logmesquite_logvas (stan/logmesquite_logvas.stan): log weight on log canopy volume,
area and shape, height and density, flat priors."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def logmesquite_logvas(N, weight, diam1, diam2, canopy_height, total_height, density, group):
    # the program declares no priors: beta and sigma are flat (improper) on their supports
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (7,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    # the program's transformed data: log canopy volume, area and shape, log total height, log density
    X = jnp.stack(
        [
            jnp.log(diam1 * diam2 * canopy_height),
            jnp.log(diam1 * diam2),
            jnp.log(diam1 / diam2),
            jnp.log(total_height),
            jnp.log(density),
            group,
        ],
        axis=-1,
    )
    with numpyro.plate("N", N):
        numpyro.sample("log_weight", dist.Normal(beta[0] + X @ beta[1:], sigma), obs=jnp.log(weight))
