"""NumPyro port of posteriordb's kidscore_momiq (stan/kidscore_momiq.stan): kid's score on mother's IQ."""

import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def kidscore_momiq(N, mom_iq, kid_score=None):
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (2,)))  # no prior: flat, as in Stan
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    with numpyro.plate("observations", N):
        numpyro.sample("kid_score", dist.Normal(beta[0] + beta[1] * mom_iq, sigma), obs=kid_score)
