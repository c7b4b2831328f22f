"""Ratios with uncertainty, from paired blocks (Kalibera & Jones: a confidence interval for the ratio, taken where
the variation lives).

A block runs every engine setup of one problem once, back to back, so the machine's drift between blocks hits
both sides of a ratio alike; a ratio is therefore taken within a block (numerator ÷ denominator, one number per
block) and never between runs of different blocks or campaigns. Per model, the answer is the median of its
block ratios, with the exact distribution-free interval for a median: the order statistics
[x_(k), x_(n+1-k)], k the largest rank with P(Binomial(n, 1/2) < k) <= (1 - LEVEL) / 2, which covers the true
median with probability >= LEVEL whatever the ratios' distribution (5 blocks: min to max, 93.75 %; 10 blocks:
2nd to 9th, 97.9 %). Fewer than MIN_BLOCKS blocks cannot reach LEVEL: their ratio is "insufficient data" and its
interval is the range of the block ratios, shown nowhere as a 90 % interval. The geometric mean over models:
percentile bootstrap, resampling each model's blocks with replacement and taking the geometric mean of the
resampled medians; fixed seed, so the same records give the same interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

BOOTSTRAP_SAMPLES = 4000
LEVEL = 0.90
SEED = 20241
MIN_BLOCKS = 5  # the fewest blocks whose order-statistic interval reaches LEVEL


@dataclass(frozen=True)
class Ratio:
    """A median of block ratios with its interval; ``low == high == value`` from one block. ``blocks``: the
    complete blocks it rests on (the fewest over models, for a geometric mean): under MIN_BLOCKS the ratio is no
    evidence for or against a claim."""

    value: float
    low: float
    high: float
    blocks: int


def median_rank(n: int, level: float = LEVEL) -> int:
    """The largest k (0 if none) with P(Binomial(n, 1/2) < k) <= (1 - level) / 2: the k-th smallest and k-th
    largest of n values bound their median with probability >= level."""
    k, below = 0, 0.0
    while k < n:
        below += comb(n, k) / 2**n
        if below > (1 - level) / 2:
            break
        k += 1
    return k


def median_ratio(block_ratios) -> Ratio:
    """The median of the block ratios and its order-statistic interval (the range under MIN_BLOCKS blocks)."""
    x = np.sort(np.asarray(block_ratios, float))
    k = max(median_rank(len(x)), 1)
    return Ratio(float(np.median(x)), float(x[k - 1]), float(x[len(x) - k]), blocks=len(x))


def interval(replicates) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return float(low), float(high)


def block_ratios_with_geomean(per_model: list[list[float]], seed: int = SEED) -> tuple[list[Ratio], Ratio]:
    """Per model (a list of its block ratios) the median with its interval, and the geometric mean over models
    with its bootstrap interval."""
    rng = np.random.default_rng(seed)
    ratios, log_draws = [], []
    for block_ratios in per_model:
        x = np.asarray(block_ratios, float)
        ratios.append(median_ratio(x))
        log_draws.append(np.log(np.median(x[rng.integers(0, len(x), size=(BOOTSTRAP_SAMPLES, len(x)))], axis=1)))
    value = float(np.exp(np.mean(np.log([r.value for r in ratios]))))
    return ratios, Ratio(value, *interval(np.exp(np.mean(log_draws, axis=0))), blocks=min(r.blocks for r in ratios))
