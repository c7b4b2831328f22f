import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def hierarchical_linear(N, J, county, x, y=None):
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    mu_beta = numpyro.sample("mu_beta", dist.Normal(0.0, 10.0))
    sigma_beta = numpyro.sample("sigma_beta", dist.HalfNormal(1.0))
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    with numpyro.plate("counties", J):
        alpha = mu_alpha + sigma_alpha * numpyro.sample("alpha_raw", dist.Normal(0.0, 1.0))
        beta = mu_beta + sigma_beta * numpyro.sample("beta_raw", dist.Normal(0.0, 1.0))
    # each home's county's (alpha, beta) in one gather, so one scatter-add in the gradient, not two (the data block
    # indexes counties from 1, as Stan does)
    coefficients = jnp.stack([alpha, beta], axis=-1)[county - 1]
    with numpyro.plate("homes", N):
        numpyro.sample("y", dist.Normal(coefficients[:, 0] + coefficients[:, 1] * x, sigma_y), obs=y)
