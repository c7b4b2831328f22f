"""NumPyro port of posteriordb's gp_pois_regr (stan/gp_pois_regr.stan): a latent GP, non-centred, Poisson counts."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln


def gp_pois_regr(N, x, k):
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    f_tilde = numpyro.sample("f_tilde", dist.Normal(0.0, 1.0).expand([N]).to_event(1))
    x = jnp.asarray(x)
    # Stan's gp_exp_quad_cov(x, alpha, rho) with its 1e-10 jitter on the diagonal
    cov = alpha**2 * jnp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / rho**2) + 1e-10 * jnp.eye(N)
    f = numpyro.deterministic("f", jnp.linalg.cholesky(cov) @ f_tilde)  # the program's transformed parameter
    # Stan's poisson_log(f), in log space: a prior draw of f past float32's exp range gives -inf, not an invalid rate
    numpyro.factor("k", (k * f - jnp.exp(f) - gammaln(k + 1.0)).sum())
