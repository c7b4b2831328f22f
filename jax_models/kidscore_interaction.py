"""NumPyro port of posteriordb's kidscore_interaction (stan/kidscore_interaction.stan): kid's score on mother's high
school, IQ and their interaction."""

import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def kidscore_interaction(N, mom_iq, mom_hs, kid_score=None):
    inter = mom_hs * mom_iq  # the published program's transformed data
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (4,)))  # no prior: flat, as in Stan
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    mu = beta[0] + beta[1] * mom_hs + beta[2] * mom_iq + beta[3] * inter
    with numpyro.plate("observations", N):
        numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)
