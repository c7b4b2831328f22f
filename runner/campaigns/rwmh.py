"""Random-walk Metropolis on rlouf's 2020 four-component mixture, many chains at once, in JAX and in NumPy.

rlouf reported 1e9 samples in 25 s on a CPU with vectorised chains; the PRNG key was later found never to
advance, so every step proposed the same move. Here each step gets its own key from ``jax.random.split`` and
splits it again for the proposal and the acceptance draw; ``tests/campaigns/test_rwmh.py`` proves consecutive moves
differ and the draws have the mixture's moments.
"""

from __future__ import annotations

import numpy as np

from stanjax.jax_models.gaussian_mixture_target import LOCATIONS, SCALES, WEIGHTS


def mixture_logdensity_jax(x):
    """Log density of the mixture at every entry of ``x`` (any shape)."""
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp
    from jax.scipy.stats import norm

    return logsumexp(jnp.log(WEIGHTS) + norm.logpdf(x[..., None], LOCATIONS, SCALES), axis=-1)


def mixture_logdensity_numpy(x: np.ndarray) -> np.ndarray:
    z = (x[..., None] - LOCATIONS) / SCALES
    return np.logaddexp.reduce(np.log(WEIGHTS) - np.log(SCALES) - 0.5 * np.log(2 * np.pi) - 0.5 * z**2, axis=-1)


def rwmh_jax(key, initial, n_steps: int, step_size: float, logdensity=mixture_logdensity_jax):
    """Draws of shape (n_steps, chains) and the acceptance rate; jit it with ``n_steps`` static."""
    import jax
    import jax.numpy as jnp

    def step(state, step_key):
        position, log_p = state
        key_move, key_accept = jax.random.split(step_key)
        proposal = position + step_size * jax.random.normal(key_move, position.shape, position.dtype)
        log_p_proposal = logdensity(proposal)
        accept = jnp.log(jax.random.uniform(key_accept, position.shape, position.dtype)) < log_p_proposal - log_p
        state = jnp.where(accept, proposal, position), jnp.where(accept, log_p_proposal, log_p)
        return state, (state[0], accept)

    _, (draws, accepted) = jax.lax.scan(step, (initial, logdensity(initial)), jax.random.split(key, n_steps))
    return draws, accepted.mean()


def rwmh_numpy(
    seed: int, initial: np.ndarray, n_steps: int, step_size: float, logdensity=mixture_logdensity_numpy
) -> tuple[np.ndarray, float]:
    """The NumPy baseline: the same algorithm, chains vectorised, a Python loop over steps."""
    rng = np.random.default_rng(seed)
    position, log_p = initial.copy(), logdensity(initial)
    draws, accepted = np.empty((n_steps, *initial.shape)), 0
    for t in range(n_steps):
        proposal = position + step_size * rng.standard_normal(position.shape)
        log_p_proposal = logdensity(proposal)
        accept = np.log(rng.uniform(size=position.shape)) < log_p_proposal - log_p
        position = np.where(accept, proposal, position)
        log_p = np.where(accept, log_p_proposal, log_p)
        draws[t], accepted = position, accepted + accept.sum()
    return draws, accepted / draws.size


def mixture_moments() -> tuple[float, float]:
    """Exact mean and variance of the mixture."""
    mean = float(np.sum(WEIGHTS * LOCATIONS))
    return mean, float(np.sum(WEIGHTS * (SCALES**2 + LOCATIONS**2)) - mean**2)
