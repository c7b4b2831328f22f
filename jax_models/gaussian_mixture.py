import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def gaussian_mixture(N, K, N_labelled, labelled_centre, y=None, y_labelled=None, z_labelled=None):
    w = numpyro.sample("w", dist.Dirichlet(jnp.full(K, 4.0)))
    # locations measured from the labelled centres (a shift: mu ~ normal(0, 5)); the labelled observations
    # identify the components, so no ordering constraint
    mu_offset = numpyro.sample("mu_offset", dist.Normal(-labelled_centre, 5.0).to_event(1))
    mu = numpyro.deterministic("mu", labelled_centre + mu_offset)
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0).expand([K]).to_event(1))
    with numpyro.plate("labelled", N_labelled):
        # the data block numbers components from 1, as Stan does
        z = numpyro.sample("z_labelled", dist.Categorical(probs=w), obs=None if z_labelled is None else z_labelled - 1)
        numpyro.sample("y_labelled", dist.Normal(mu[z], sigma[z]), obs=y_labelled)
    with numpyro.plate("observations", N):
        numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(probs=w), dist.Normal(mu, sigma)), obs=y)
