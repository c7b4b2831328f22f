"""NumPyro port of posteriordb's hmm_example (stan/hmm_example.stan): two hidden states, the forward algorithm by a
scan in log space (as NumPyro's own HMM example writes it)."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax import lax
from jax.scipy.special import logsumexp


def hmm_example(N, K, y):
    theta1 = numpyro.sample("theta1", dist.Dirichlet(jnp.ones(K)))  # a simplex with no prior: uniform, as in Stan
    theta2 = numpyro.sample("theta2", dist.Dirichlet(jnp.ones(K)))
    # Stan's positive_ordered[K] mu with a normal on each element: flat on the ordered positive vectors, then the
    # two normals as factors (no truncation constant, as Stan's target += adds none)
    mu = numpyro.sample("mu", dist.ImproperUniform(dist.constraints.positive_ordered_vector, (), (K,)))
    numpyro.factor("mu_prior", dist.Normal(jnp.array([3.0, 10.0]), 1.0).log_prob(mu).sum())
    log_gamma = jnp.log(jnp.stack([theta1, theta2]))  # row j: from state j
    log_omega = dist.Normal(mu, 1.0).log_prob(jnp.asarray(y)[:, None])  # (N, K)

    def forward(log_alpha, log_omega_t):
        return logsumexp(log_alpha[:, None] + log_gamma, axis=0) + log_omega_t, None

    # the observations enter only through the forward algorithm, so the model takes them (no prior-predictive branch)
    log_alpha, _ = lax.scan(forward, log_omega[0] - jnp.log(K), log_omega[1:])
    numpyro.factor("y", logsumexp(log_alpha))
