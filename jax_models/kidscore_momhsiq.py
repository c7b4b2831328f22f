"""NumPyro port of posteriordb's kidscore_momhsiq (stan/kidscore_momhsiq.stan): kid's score on mother's high school
and IQ."""

import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def kidscore_momhsiq(N, mom_iq, mom_hs, kid_score=None):
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (3,)))  # no prior: flat, as in Stan
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    mu = beta[0] + beta[1] * mom_hs + beta[2] * mom_iq
    with numpyro.plate("observations", N):
        numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)
