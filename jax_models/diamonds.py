"""NumPyro port of posteriordb's diamonds (stan/diamonds.stan, brms): log price on 24 centred predictors."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def diamonds(N, Y, K, X, prior_only):
    # the published program's transformed data: the design matrix without its intercept column, centred
    X = jnp.asarray(X)
    means_X = jnp.mean(X[:, 1:], axis=0)
    Xc = X[:, 1:] - means_X
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([K - 1]).to_event(1))
    Intercept = numpyro.sample("Intercept", dist.StudentT(3.0, 8.0, 10.0))  # the intercept at the predictors' means
    sigma = numpyro.sample("sigma", dist.LeftTruncatedDistribution(dist.StudentT(3.0, 0.0, 10.0), low=0.0))
    if not prior_only:
        with numpyro.plate("N", N):
            numpyro.sample("Y", dist.Normal(Intercept + Xc @ b, sigma), obs=Y)
    # the published program's generated quantity: the intercept at X's zero
    numpyro.deterministic("b_Intercept", Intercept - means_X @ b)
