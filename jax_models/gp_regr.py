"""NumPyro port of posteriordb's gp_regr (stan/gp_regr.stan): GP regression, exponentiated-quadratic kernel, marginal
likelihood."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def gp_regr(N, x, y=None):
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    x = jnp.asarray(x)
    # Stan's gp_exp_quad_cov(x, alpha, rho) + diag_matrix(rep_vector(sigma, N)): as published, sigma itself (not
    # its square) is added to the diagonal
    cov = alpha**2 * jnp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / rho**2) + sigma * jnp.eye(N)
    numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(N), scale_tril=jnp.linalg.cholesky(cov)), obs=y)
