"""NumPyro port of posteriordb's kidscore_interaction_c2 (stan/kidscore_interaction_c2.stan): kid's score on mother's
high school and IQ, centred at reference points (0.5, 100), and their interaction."""

import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def kidscore_interaction_c2(N, mom_hs, mom_iq, kid_score=None):
    # the published program's transformed data: predictors centred at reference points
    c2_mom_hs = mom_hs - 0.5
    c2_mom_iq = mom_iq - 100.0
    inter = c2_mom_hs * c2_mom_iq
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (4,)))  # no prior: flat, as in Stan
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))  # flat on (0, inf)
    mu = beta[0] + beta[1] * c2_mom_hs + beta[2] * c2_mom_iq + beta[3] * inter
    with numpyro.plate("observations", N):
        numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)
