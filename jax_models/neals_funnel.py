import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def neals_funnel(D):
    v = numpyro.sample("v", dist.Normal(0.0, 3.0))
    with numpyro.plate("values", D - 1):
        numpyro.sample("x", dist.Normal(0.0, jnp.exp(v / 2)))  # centred: the funnel
