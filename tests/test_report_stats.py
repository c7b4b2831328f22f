"""Ratio intervals and claim verdicts: the rules the report states, checked on numbers with known answers."""

import math
import re

import numpy as np
import pytest

from reports import claims, stats
from reports.numbers import count, number
from reports.stats import Ratio


def test_ratio_of_medians_with_an_interval_around_it():
    [ratio], geo = stats.ratios_with_geomean([([10.0, 11.0, 12.0, 13.0], [2.0, 2.2, 2.4, 2.6])])
    assert ratio.value == pytest.approx(np.median([10, 11, 12, 13]) / np.median([2, 2.2, 2.4, 2.6]))
    assert ratio.low < ratio.value < ratio.high
    assert (geo.value, geo.low, geo.high) == pytest.approx((ratio.value, ratio.low, ratio.high))  # one model


def test_one_repeat_each_has_no_spread_and_the_seed_fixes_the_interval():
    [ratio], _ = stats.ratios_with_geomean([([8.0], [2.0])])
    assert ratio == Ratio(4.0, 4.0, 4.0, fewest=1)
    rng = np.random.default_rng(0)
    pairs = [(list(rng.lognormal(size=9)), list(rng.lognormal(size=7))) for _ in range(3)]
    assert stats.ratios_with_geomean(pairs) == stats.ratios_with_geomean(pairs)
    assert stats.ratios_with_geomean(pairs, seed=1) != stats.ratios_with_geomean(pairs, seed=2)


def test_geometric_mean_over_models():
    _, geo = stats.ratios_with_geomean([([2.0], [1.0]), ([8.0], [1.0])])
    assert geo.value == pytest.approx(4.0)


def test_noisier_repeats_give_a_wider_interval():
    rng = np.random.default_rng(0)
    base = rng.normal(size=8)
    [quiet], _ = stats.ratios_with_geomean([(list(100 + base), list(50 + base))])
    [noisy], _ = stats.ratios_with_geomean([(list(100 + 20 * base), list(50 + 10 * base))])
    assert noisy.high / noisy.low > quiet.high / quiet.low


@pytest.mark.parametrize(("ratio", "claimed", "verdict"), [
    (Ratio(5.0, 4.0, 6.0, 3), 5.0, "reproduced"),
    (Ratio(2.0, 1.5, 3.5, 3), 5.0, "reproduced"),  # the interval reaches the band (5 / 1.5 = 3.33)
    (Ratio(2.0, 1.5, 3.0, 3), 5.0, "not reproduced"),
    (Ratio(0.3, 0.25, 0.35, 3), 4.0, "not reproduced"),
    (Ratio(40.0, 35.0, 45.0, 3), 20.0, "not reproduced"),
])
def test_ratio_verdicts_follow_the_stated_band(ratio, claimed, verdict):
    assert claims.ratio_verdict(ratio, claimed).split(" (")[0] == verdict


@pytest.mark.parametrize(("ratio", "size"), [(Ratio(5.0, 5.0, 5.0, 1), "default"), (Ratio(5.0, 4.0, 6.0, 1), "default"),
                                             (Ratio(5.0, 4.0, 6.0, 3), "tiny")],
                         ids=["one-repeat-each", "one-repeat-on-a-side", "tiny-data"])
def test_a_ratio_without_enough_evidence_gets_no_verdict(ratio, size):
    """One repeat on a side (its noise is not in the interval) or tiny data: never "reproduced", whatever the
    value."""
    assert claims.ratio_verdict(ratio, 5.0, size).startswith("insufficient data (")
    assert claims.ratio_verdict(Ratio(5.0, 4.0, 6.0, 2), 5.0, "default").startswith("reproduced")


def test_fewest_repeats_is_carried_into_every_ratio_and_the_mean():
    ratios, geo = stats.ratios_with_geomean([([1.0, 2.0, 3.0], [1.0, 2.0]), ([1.0], [1.0, 2.0, 3.0])])
    assert [r.fewest for r in ratios] == [2, 1] and geo.fewest == 1


def test_crossover_is_interpolated_on_log_axes():
    n = np.array([1e3, 1e4, 1e5])
    at, text = claims.crossover(n, np.array([0.5, 0.8, 2.0]))
    fraction = math.log(1 / 0.8) / math.log(2.0 / 0.8)
    assert at == pytest.approx(10 ** (4 + fraction))
    assert "between 10,000 and 100,000" in text


def test_no_crossover_inside_the_range_says_who_leads():
    n = np.array([1e3, 1e4])
    assert claims.crossover(n, np.array([1.5, 3.0])) == (None, "JAX ahead at every N measured (1,000–10,000)")
    assert claims.crossover(n, np.array([0.5, 0.9])) == (None, "Stan ahead at every N measured (1,000–10,000)")


def test_a_forest_plot_draws_single_repeat_ratios():
    from reports.figures import forest_svg

    # 11 models, one repeat each, as in the tiny suite; with seed 5 the geometric mean rounds out of its interval.
    values = np.random.default_rng(5).lognormal(size=(11, 2))
    ratios, geo = stats.ratios_with_geomean([([a], [b]) for a, b in values])
    assert min(geo.value - geo.low, geo.high - geo.value) > -1e-12  # the interval is the point, up to rounding
    comparison = {"numerator": "A", "denominator": "B", "warm": geo, "cold": None, "machine": "m", "size": "small",
                  "models": [{"model_id": f"m{i}", "warm": r, "cold": None} for i, r in enumerate(ratios)]}
    assert forest_svg(comparison).startswith("<svg")


def test_forest_plot_ticks_are_labelled_on_both_sides_of_one():
    """Every ratio between 3× and 5×: the axis still shows labelled ticks below and above 1×."""
    from reports.figures import forest_svg

    ratios, geo = stats.ratios_with_geomean([([3.0, 3.3], [1.0, 1.1]), ([5.0, 5.2], [1.0, 0.9])])
    comparison = {"numerator": "A", "denominator": "B", "warm": geo, "cold": None, "machine": "m", "size": "small",
                  "models": [{"model_id": f"m{i}", "warm": r, "cold": None} for i, r in enumerate(ratios)]}
    labels = [float(t.replace(",", "")) for t in re.findall(r">([\d.,]+)×</text>", forest_svg(comparison))]
    assert min(labels) < 1 < max(labels), labels


@pytest.mark.parametrize(("value", "digits", "text"), [
    (2204.9, 3, "2,200"), (282.8, 3, "283"), (85.63, 3, "85.6"), (0.003471, 3, "0.00347"), (4.0, 3, "4.00"),
    (1.00549, 4, "1.005"), (16_812.0, 3, "16,800"), (1.4e9, 3, "1,400,000,000"), (12, 3, "12"), (None, 3, "–"),
    (float("nan"), 3, "–"), (0.0, 3, "0"), (-0.5, 3, "-0.500"), (3.2157e16, 3, "3.22 × 10¹⁶"),
])
def test_numbers_have_three_significant_digits_and_thousands_separators(value, digits, text):
    assert number(value, digits) == text
    assert "e+" not in number(value, digits)


def test_counts_are_whole_numbers_whatever_their_dtype():
    assert count(np.float64(12.0)) == "12" and count(1234) == "1,234" and count(float("nan")) == "–"
