import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln
from numpyro.distributions import constraints


class OrderedNormal(dist.Distribution):
    """K independent normals sorted: Stan's ``ordered[K] mu; mu ~ normal(loc, scale)`` (order statistics)."""

    support = constraints.ordered_vector

    def __init__(self, loc, scale, K):
        self.loc, self.scale, self.K = loc, scale, K
        super().__init__(batch_shape=(), event_shape=(K,))

    def sample(self, key, sample_shape=()):
        draws = self.loc + self.scale * jax.random.normal(key, sample_shape + self.event_shape)
        return jnp.sort(draws, axis=-1)

    def log_prob(self, value):
        return dist.Normal(self.loc, self.scale).log_prob(value).sum(-1) + gammaln(self.K + 1.0)


def gaussian_mixture(N, K, y=None):
    w = numpyro.sample("w", dist.Dirichlet(jnp.full(K, 4.0)))
    mu = numpyro.sample("mu", OrderedNormal(0.0, 5.0, K))
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0).expand([K]).to_event(1))
    with numpyro.plate("observations", N):
        numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(probs=w), dist.Normal(mu, sigma)), obs=y)
