"""NumPyro port of posteriordb's logmesquite_logva (stan/logmesquite_logva.stan): log weight on log canopy volume and
area, flat priors."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def logmesquite_logva(N, weight, diam1, diam2, canopy_height, group):
    # the program declares no priors: beta and sigma are flat (improper) on their supports
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (4,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    # the program's transformed data: log canopy volume and log canopy area
    X = jnp.stack([jnp.log(diam1 * diam2 * canopy_height), jnp.log(diam1 * diam2), group], axis=-1)
    with numpyro.plate("N", N):
        numpyro.sample("log_weight", dist.Normal(beta[0] + X @ beta[1:], sigma), obs=jnp.log(weight))
