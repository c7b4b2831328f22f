import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def irt_2pl_centred(J, K, N, jj, kk, y=None):
    mu_beta = numpyro.sample("mu_beta", dist.Cauchy(0.0, 5.0))
    sigma_beta = numpyro.sample("sigma_beta", dist.HalfCauchy(5.0))
    sigma_gamma = numpyro.sample("sigma_gamma", dist.HalfCauchy(5.0))
    with numpyro.plate("students", J):
        alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0))
    with numpyro.plate("questions", K):  # centred, as the Stan User's Guide writes the model
        beta = numpyro.sample("beta", dist.Normal(0.0, sigma_beta))
        log_gamma = numpyro.sample("log_gamma", dist.Normal(0.0, sigma_gamma))  # log discriminations
    gamma, student, question = jnp.exp(log_gamma), jj - 1, kk - 1
    with numpyro.plate("answers", N):
        logits = gamma[question] * (alpha[student] - (beta[question] + mu_beta))
        numpyro.sample("y", dist.Bernoulli(logits=logits), obs=y)
