"""Ratios with uncertainty: percentile bootstrap over repeats, per model and as a geometric mean over models.

The repeats of two engines are independent runs, so each side is resampled on its own (with replacement) and
the ratio of the two medians is taken per resample. A geometric mean over models resamples every model at once
and takes the geometric mean of the resampled per-model ratios. Fixed seed: the same records give the same
interval, so every number in the report can be recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP_SAMPLES = 4000
LEVEL = 0.90
SEED = 20241


@dataclass(frozen=True)
class Ratio:
    """A ratio of medians with its bootstrap interval; ``low == high == value`` when both sides had 1 repeat.
    ``fewest``: the fewest repeats on either side (over models, for a geometric mean): with one repeat on a side
    that side's noise is missing from the interval, so the ratio is no evidence for or against a claim."""

    value: float
    low: float
    high: float
    fewest: int


def resampled_ratios(numerator, denominator, rng: np.random.Generator, samples: int = BOOTSTRAP_SAMPLES):
    """``samples`` bootstrap replicates of median(numerator) / median(denominator)."""
    a, b = np.asarray(numerator, float), np.asarray(denominator, float)
    a_idx = rng.integers(0, len(a), size=(samples, len(a)))
    b_idx = rng.integers(0, len(b), size=(samples, len(b)))
    return np.median(a[a_idx], axis=1) / np.median(b[b_idx], axis=1)


def interval(replicates) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return float(low), float(high)


def ratios_with_geomean(pairs: list[tuple[list[float], list[float]]], seed: int = SEED) -> tuple[list[Ratio], Ratio]:
    """Per-pair ratio of medians with its interval, and the geometric mean over pairs with its interval.

    ``pairs`` holds (numerator values, denominator values) per model, each a list of per-repeat figures."""
    rng = np.random.default_rng(seed)
    per_model, replicates = [], []
    for numerator, denominator in pairs:
        value = float(np.median(numerator) / np.median(denominator))
        draws = resampled_ratios(numerator, denominator, rng)
        replicates.append(draws)
        per_model.append(Ratio(value, *interval(draws), fewest=min(len(numerator), len(denominator))))
    log_mean = np.mean(np.log([r.value for r in per_model]))
    geomean_draws = np.exp(np.mean(np.log(np.vstack(replicates)), axis=0))
    return per_model, Ratio(float(np.exp(log_mean)), *interval(geomean_draws),
                            fewest=min(r.fewest for r in per_model))
