"""NumPyro port of posteriordb's kidscore_interaction_z (stan/kidscore_interaction_z.stan): kid's score on mother's
high school and IQ, each centred and divided by two sds, and their interaction."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def kidscore_interaction_z(N, mom_hs, mom_iq, kid_score=None):
    # the published program's transformed data: predictors standardised by two sds (Stan's sd: N - 1 denominator)
    z_mom_hs = (mom_hs - jnp.mean(mom_hs)) / (2 * jnp.std(mom_hs, ddof=1))
    z_mom_iq = (mom_iq - jnp.mean(mom_iq)) / (2 * jnp.std(mom_iq, ddof=1))
    inter = z_mom_hs * z_mom_iq
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (4,)))  # no prior: flat, as in Stan
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))  # flat on (0, inf)
    mu = beta[0] + beta[1] * z_mom_hs + beta[2] * z_mom_iq + beta[3] * inter
    with numpyro.plate("observations", N):
        numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)
