"""NumPyro port of posteriordb's earn_height (stan/earn_height.stan): earnings on height, flat priors."""

import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def earn_height(N, earn, height):
    # no prior in the published program: flat on beta, flat on sigma > 0 (improper, as Stan's)
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (2,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    mu = beta[0] + beta[1] * height
    with numpyro.plate("N", N):
        numpyro.sample("earn", dist.Normal(mu, sigma), obs=earn)
