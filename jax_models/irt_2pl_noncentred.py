import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def irt_2pl_noncentred(J, K, N, jj, kk, y=None):
    mu_beta = numpyro.sample("mu_beta", dist.Cauchy(0.0, 5.0))
    sigma_beta = numpyro.sample("sigma_beta", dist.HalfCauchy(5.0))
    sigma_gamma = numpyro.sample("sigma_gamma", dist.HalfCauchy(5.0))
    with numpyro.plate("students", J):
        alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0))
    with numpyro.plate("questions", K):  # non-centred: in units of their scales
        beta_raw = numpyro.sample("beta_raw", dist.Normal(0.0, 1.0))
        gamma_raw = numpyro.sample("gamma_raw", dist.Normal(0.0, 1.0))
    beta = numpyro.deterministic("beta", sigma_beta * beta_raw)
    log_gamma = numpyro.deterministic("log_gamma", sigma_gamma * gamma_raw)
    gamma, student, question = jnp.exp(log_gamma), jj - 1, kk - 1
    with numpyro.plate("answers", N):
        logits = gamma[question] * (alpha[student] - (beta[question] + mu_beta))
        numpyro.sample("y", dist.Bernoulli(logits=logits), obs=y)
