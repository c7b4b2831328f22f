import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def eight_schools_centered(J, sigma, y=None):
    avg_effect = numpyro.sample("avg_effect", dist.Normal(0.0, 10.0))
    log_stddev = numpyro.sample("log_stddev", dist.Normal(5.0, 1.0))
    with numpyro.plate("J", J):
        school_effects = numpyro.sample("school_effects", dist.Normal(avg_effect, jnp.exp(log_stddev)))
        numpyro.sample("y", dist.Normal(school_effects, sigma), obs=y)
