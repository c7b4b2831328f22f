"""NumPyro port of posteriordb's kidscore_mom_work (stan/kidscore_mom_work.stan): kid's score on mother's work
category (1-4; category 1 the baseline)."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def kidscore_mom_work(N, mom_work, kid_score=None):
    # the published program's transformed data: indicators of categories 2, 3 and 4, one column each
    work = (jnp.asarray(mom_work)[:, None] == jnp.arange(2, 5)).astype(jnp.result_type(float))
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (4,)))  # no prior: flat, as in Stan
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))  # flat on (0, inf)
    mu = beta[0] + work @ beta[1:]
    with numpyro.plate("observations", N):
        numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)
