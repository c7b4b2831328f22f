import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def poisson_regression(N, K, X, y=None):
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 2.5))
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([K]).to_event(1))
    with numpyro.plate("N", N):
        numpyro.sample("y", dist.Poisson(jnp.exp(alpha + X @ beta)), obs=y)
