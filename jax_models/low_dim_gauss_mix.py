"""NumPyro port of posteriordb's low_dim_gauss_mix (stan/low_dim_gauss_mix.stan): two normals, ordered locations."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln
from numpyro.distributions import constraints


class OrderedNormal(dist.Distribution):
    """Stan's ``ordered[K] mu; mu ~ normal(loc, scale)``: the order statistics of K normals (the normals' density
    times K!) on the ordered vectors, which NumPyro's ordered transform maps as Stan's does."""

    support = constraints.ordered_vector

    def __init__(self, loc, scale, size: int):
        self.loc, self.scale = loc, scale
        super().__init__(event_shape=(size,))

    def sample(self, key, sample_shape=()):
        draws = dist.Normal(self.loc, self.scale).sample(key, sample_shape + self.event_shape)
        return jnp.sort(draws, axis=-1)

    def log_prob(self, value):
        return dist.Normal(self.loc, self.scale).log_prob(value).sum(-1) + gammaln(self.event_shape[0] + 1.0)


def low_dim_gauss_mix(N, y=None):
    mu = numpyro.sample("mu", OrderedNormal(0.0, 2.0, 2))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([2]).to_event(1))
    theta = numpyro.sample("theta", dist.Beta(5.0, 5.0))
    with numpyro.plate("observations", N):
        mixing = dist.Categorical(probs=jnp.stack([theta, 1.0 - theta], axis=-1))
        numpyro.sample("y", dist.MixtureSameFamily(mixing, dist.Normal(mu, sigma)), obs=y)
