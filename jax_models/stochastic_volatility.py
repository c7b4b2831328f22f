import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def log_volatility(mu, phi, sigma, h_std):
    """h[0] = mu + sigma h_std[0] / sqrt(1 - phi^2); h[t] = mu + phi (h[t-1] - mu) + sigma h_std[t]."""
    innovations = sigma * jnp.concatenate([h_std[:1] / jnp.sqrt(1.0 - phi**2), h_std[1:]])

    def step(previous, innovation):
        current = phi * previous + innovation
        return current, current

    _, centred = jax.lax.scan(step, 0.0, innovations)
    return mu + centred


def stochastic_volatility(T, y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    phi = numpyro.sample("phi", dist.Uniform(-1.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("time", T):
        h_std = numpyro.sample("h_std", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(0.0, jnp.exp(log_volatility(mu, phi, sigma, h_std) / 2)), obs=y)
