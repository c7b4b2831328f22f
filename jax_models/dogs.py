"""NumPyro port of posteriordb's dogs (stan/dogs.stan): each dog's chance to avoid the shock from its past trials."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def dogs(n_dogs, n_trials, y):
    beta = numpyro.sample("beta", dist.Normal(0.0, 100.0).expand([3]).to_event(1))
    # the published program's transformed parameters, kept as deterministic sites so both sides store them per draw
    y = jnp.asarray(y)
    n_shock = numpyro.deterministic("n_shock", jnp.cumsum(y, axis=1) - y)  # shocks before trial t
    n_avoid = numpyro.deterministic("n_avoid", jnp.arange(n_trials) - n_shock)  # avoidances before trial t
    p = numpyro.deterministic("p", beta[0] + beta[1] * n_avoid + beta[2] * n_shock)
    with numpyro.plate("dogs", n_dogs, dim=-2), numpyro.plate("trials", n_trials, dim=-1):
        numpyro.sample("y", dist.Bernoulli(logits=p), obs=y)
