"""NumPyro port of posteriordb's blr (stan/blr.stan): Bayesian linear regression."""

import numpyro
import numpyro.distributions as dist


def blr(N, D, X, y=None):
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([D]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    with numpyro.plate("observations", N):
        numpyro.sample("y", dist.Normal(X @ beta, sigma), obs=y)
