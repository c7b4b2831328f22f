import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def stochastic_volatility_sp500(T, centered_returns=None):
    persistence_of_volatility = numpyro.sample(
        "persistence_of_volatility",
        # 2 Beta(20, 1.5) - 1; the affine map's domain given, so the support is (-1, 1), Stan's logit-based transform
        dist.TransformedDistribution(
            dist.Beta(20.0, 1.5), dist.transforms.AffineTransform(-1.0, 2.0, domain=constraints.unit_interval)
        ),
    )
    white_noise_shock_scale = numpyro.sample("white_noise_shock_scale", dist.HalfCauchy(2.0))
    # the AR(1) innovations, standardised (non-centred)
    log_volatility_std = numpyro.sample("log_volatility_std", dist.Normal(0.0, 1.0).expand([T]).to_event(1))
    # log_volatility[1] = mean_log_volatility + its stationary scale x log_volatility_std[1], with
    # mean_log_volatility ~ cauchy(0, 5): the first state is sampled, the mean follows (a map of unit Jacobian)
    stationary_shift = white_noise_shock_scale * log_volatility_std[0] / jnp.sqrt(1.0 - persistence_of_volatility**2)
    initial_log_volatility = numpyro.sample("initial_log_volatility", dist.Cauchy(stationary_shift, 5.0))
    mean_log_volatility = numpyro.deterministic("mean_log_volatility", initial_log_volatility - stationary_shift)

    def step(previous, innovation):
        current = mean_log_volatility + persistence_of_volatility * (previous - mean_log_volatility) + innovation
        return current, current

    _, rest = jax.lax.scan(step, initial_log_volatility, white_noise_shock_scale * log_volatility_std[1:])
    log_volatility = numpyro.deterministic("log_volatility", jnp.concatenate([initial_log_volatility[None], rest]))
    # Unvalidated: a prior draw (Cauchy mean, half-Cauchy shock scale) can put a log volatility beyond float32's exp
    # range, a scale of 0 or inf, whose log density is -inf (Stan rejects it), not an error; posteriors never do.
    with numpyro.plate("time", T):
        numpyro.sample(
            "centered_returns", dist.Normal(0.0, jnp.exp(log_volatility / 2), validate_args=False), obs=centered_returns
        )
