"""Importance weighing of an approximation's draws, for both sides' approximate engines
(:mod:`stanjax.runner.engines.approximate`, :mod:`stanjax.runner.engines.stan_approximate`): the weights p / q
Pareto-smoothed (PSIS, Vehtari et al. 2024), their k-hat, and the draws kept."""

from __future__ import annotations

import numpy as np

IMPORTANCE_DRAWS = 10  # draws weighted per draw kept: resampling keeps few repeats where k-hat is small


def weigh(log_weights, kept: int, seed: int, resample: bool) -> tuple[np.ndarray, dict]:
    """The draws to keep, by index, and the record's facts of their weighing: the log weights log p - log q of
    every draw made Pareto-smoothed (k-hat), then ``kept`` of the draws resampled by smoothed weight with
    replacement, or, with ``resample`` False, the first ``kept`` of q's own. Both sides' approximations go through
    here (:mod:`stanjax.runner.engines.stan_approximate` too)."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    smoothed, khat = pareto_smoothed(log_weights)
    if resample:
        chosen = np.random.default_rng(seed).choice(len(log_weights), size=kept, p=np.exp(smoothed))
    else:
        chosen = np.arange(kept)
    return chosen, {
        "importance_draws": len(log_weights),
        "kept": "resampled by smoothed weight, with replacement" if resample else "q's own draws",
        "khat": khat,
        "importance_ess": importance_ess(smoothed) if np.isfinite(log_weights).any() else 0.0,
        "non_finite_weights": int(np.sum(~np.isfinite(log_weights))),
    }


def pareto_smoothed(log_weights: np.ndarray) -> tuple[np.ndarray, float]:
    """PSIS: normalised log weights, their largest tail Pareto-smoothed, and the tail's k-hat (arviz-stats). A
    non-finite weight (the target undefined where q put a draw) counts as weight zero. Where no weight is finite,
    or the tail cannot be fitted because one draw outweighs the rest by more than a float can hold (a proposal far
    from the target: every other weight is 0 beside it), k-hat is inf and the weights are left unsmoothed."""
    from arviz_stats.base import array_stats
    from scipy.special import logsumexp

    finite = np.isfinite(log_weights)
    if not finite.any():
        return np.full(log_weights.shape, -np.log(len(log_weights))), float("inf")
    raw = np.where(finite, log_weights, -np.inf)
    # arviz-stats smooths importance weights given as the negatives of log likelihoods (its PSIS-LOO convention)
    finite_smoothed, khat = array_stats.psislw(-log_weights[finite])
    if not (np.isfinite(khat) and np.all(np.isfinite(finite_smoothed))):
        return raw - logsumexp(raw), float("inf")
    smoothed = np.full(log_weights.shape, -np.inf)
    smoothed[finite] = finite_smoothed
    return smoothed - logsumexp(smoothed), float(khat)


def importance_ess(normalised_log_weights: np.ndarray) -> float:
    """Kish's effective sample size of the weighted draws, 1 / sum w^2 (the weights normalised). Where no weight
    was finite the run's is 0: :func:`pareto_smoothed` then spreads the weights evenly only to have draws to keep."""
    return float(1.0 / np.sum(np.exp(2.0 * normalised_log_weights)))
