"""NumPyro port of posteriordb's kidscore_interaction_c (stan/kidscore_interaction_c.stan): kid's score on mother's
high school and IQ, centred at their means, and their interaction."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def kidscore_interaction_c(N, mom_hs, mom_iq, kid_score=None):
    # the published program's transformed data: predictors centred at their means
    c_mom_hs = mom_hs - jnp.mean(mom_hs)
    c_mom_iq = mom_iq - jnp.mean(mom_iq)
    inter = c_mom_hs * c_mom_iq
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (4,)))  # no prior: flat, as in Stan
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))  # flat on (0, inf)
    mu = beta[0] + beta[1] * c_mom_hs + beta[2] * c_mom_iq + beta[3] * inter
    with numpyro.plate("observations", N):
        numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)
