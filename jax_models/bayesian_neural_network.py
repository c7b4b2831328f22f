"""NumPyro's own Bayesian neural network example (examples/bnn.py), with the held-out quantities the gates judge:
the network's output at held-out inputs and the held-out observations' likelihood (deterministic sites of the
names stan/bayesian_neural_network.stan generates)."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def network(X, w1, w2, w3):
    return jnp.tanh(jnp.tanh(X @ w1) @ w2) @ w3


def bayesian_neural_network(N, D, H, X, N_test, X_test, y=None, y_test=None):
    w1 = numpyro.sample("w1", dist.Normal(jnp.zeros((D, H)), 1.0).to_event(2))
    w2 = numpyro.sample("w2", dist.Normal(jnp.zeros((H, H)), 1.0).to_event(2))
    w3 = numpyro.sample("w3", dist.Normal(jnp.zeros(H), 1.0).to_event(1))
    prec_obs = numpyro.sample("prec_obs", dist.Gamma(3.0, 1.0))
    sigma_obs = 1.0 / jnp.sqrt(prec_obs)
    numpyro.sample("y", dist.Normal(network(X, w1, w2, w3), sigma_obs).to_event(1), obs=y)
    mu_test = numpyro.deterministic("mu_test", network(X_test, w1, w2, w3))
    if y_test is not None:
        numpyro.deterministic("lik_test", jnp.exp(dist.Normal(mu_test, sigma_obs).log_prob(y_test)))
