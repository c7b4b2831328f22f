import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def gp_regression(N, x, y=None):
    rho = numpyro.sample("rho", dist.InverseGamma(5.0, 5.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    distance = x[:, None] - x[None, :]
    covariance = alpha**2 * jnp.exp(-0.5 * (distance / rho) ** 2) + sigma**2 * jnp.eye(N)
    numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(N), scale_tril=jnp.linalg.cholesky(covariance)), obs=y)
