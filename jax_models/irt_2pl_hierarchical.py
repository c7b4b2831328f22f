import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def irt_2pl_hierarchical(I, J, y=None):
    mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 2.0))
    sigma_b = numpyro.sample("sigma_b", dist.HalfNormal(1.0))
    sigma_a = numpyro.sample("sigma_a", dist.HalfNormal(1.0))
    with numpyro.plate("students", J):
        theta = numpyro.sample("theta", dist.Normal(0.0, 1.0))
    with numpyro.plate("items", I):
        # difficulties centred: every item is answered by all J students, so its data pin it down; log
        # discriminations non-centred (a_raw = log a / sigma_a), as sigma_a is small and poorly known
        b = numpyro.sample("b", dist.Normal(mu_b, sigma_b))
        a_raw = numpyro.sample("a_raw", dist.Normal(0.0, 1.0))
    a = jnp.exp(sigma_a * a_raw)
    with numpyro.plate("answer_items", I, dim=-2), numpyro.plate("answer_students", J, dim=-1):
        numpyro.sample("y", dist.Bernoulli(logits=a[:, None] * (theta[None, :] - b[:, None])), obs=y)
