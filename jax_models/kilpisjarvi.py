"""NumPyro port of posteriordb's kilpisjarvi (stan/kilpisjarvi.stan): a linear trend, the intercept sampled at the
mean of x (the program's one change)."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def kilpisjarvi(N, x, y, xpred, pmualpha, psalpha, pmubeta, psbeta):
    x_mean = jnp.mean(x)
    alpha_c = numpyro.sample("alpha_c", dist.ImproperUniform(constraints.real, (), ()))
    beta = numpyro.sample("beta", dist.Normal(pmubeta, psbeta))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    alpha = numpyro.deterministic("alpha", alpha_c - beta * x_mean)
    numpyro.factor("alpha_prior", dist.Normal(pmualpha, psalpha).log_prob(alpha))
    with numpyro.plate("N", N):
        numpyro.sample("y", dist.Normal(alpha_c + beta * (x - x_mean), sigma), obs=y)
