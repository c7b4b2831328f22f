"""Ratio intervals and claim verdicts: the rules the report states, checked on numbers with known answers."""

import math
import re
from collections import Counter

import numpy as np
import pytest

from stanjax.reports import claim_verdicts, stats, study_claims
from stanjax.reports.numbers import count, interval, number, span, speed, times
from stanjax.reports.stats import Ratio


def test_block_ratios_worked_example_median_and_order_statistic_interval():
    """Seven blocks: ratios 1.1, 0.9, 1.3, 1.0, 1.2, 1.6, 0.8. Median 1.1. P(Binomial(7, 1/2) <= 0) = 1/128 <=
    0.05 < P(<= 1) = 8/128, so k = 1: the interval is the smallest to the largest, 0.8-1.6 (coverage 98.4 %)."""
    [ratio], geo = stats.block_ratios_with_geomean([[1.1, 0.9, 1.3, 1.0, 1.2, 1.6, 0.8]])
    assert ratio == Ratio(pytest.approx(1.1), 0.8, 1.6, blocks=7)
    assert geo.value == pytest.approx(1.1) and geo.blocks == 7  # one model: its median
    # Ten blocks 1..10: median 5.5; P(B(10) <= 1) = 11/1024 <= 0.05 < P(<= 2) = 56/1024, so k = 2: 2nd to 9th.
    assert stats.median_ratio(range(1, 11)) == Ratio(5.5, 2.0, 9.0, blocks=10)


@pytest.mark.parametrize(("n", "k"), [(1, 0), (4, 0), (5, 1), (7, 1), (8, 2), (10, 2), (12, 3), (20, 6)])
def test_the_order_statistic_rank_is_the_largest_with_tail_at_most_five_percent(n, k):
    tail = lambda j: sum(math.comb(n, i) for i in range(j)) / 2**n  # noqa: E731  P(Binomial(n, 1/2) < j)
    assert stats.median_rank(n) == k
    assert k == 0 or tail(k) <= 0.05 < tail(k + 1)
    assert stats.MIN_BLOCKS == min(m for m in range(1, 30) if stats.median_rank(m) >= 1)


def test_under_five_blocks_the_interval_is_the_range_and_one_block_has_none():
    assert stats.median_ratio([2.0, 4.0, 3.0]) == Ratio(3.0, 2.0, 4.0, blocks=3)
    assert stats.median_ratio([4.0]) == Ratio(4.0, 4.0, 4.0, blocks=1)


def test_the_geometric_mean_resamples_blocks_within_each_model_with_a_fixed_seed():
    _, geo = stats.block_ratios_with_geomean([[2.0], [8.0]])
    assert geo == Ratio(pytest.approx(4.0), pytest.approx(4.0), pytest.approx(4.0), blocks=1)
    rng = np.random.default_rng(0)
    models = [list(rng.lognormal(size=n)) for n in (5, 7, 9)]
    ratios, geo = stats.block_ratios_with_geomean(models)
    assert [r.blocks for r in ratios] == [5, 7, 9] and geo.blocks == 5
    assert geo.value == pytest.approx(np.exp(np.mean(np.log([np.median(m) for m in models]))))
    assert geo.low < geo.value < geo.high
    assert stats.block_ratios_with_geomean(models) == stats.block_ratios_with_geomean(models)
    assert stats.block_ratios_with_geomean(models, seed=1) != stats.block_ratios_with_geomean(models, seed=2)


def test_noisier_blocks_give_a_wider_interval():
    base = np.random.default_rng(0).normal(size=9)
    [quiet], quiet_geo = stats.block_ratios_with_geomean([list(2 + 0.05 * base)])
    [noisy], noisy_geo = stats.block_ratios_with_geomean([list(2 + 0.5 * base)])
    assert noisy.high / noisy.low > quiet.high / quiet.low
    assert noisy_geo.high / noisy_geo.low > quiet_geo.high / quiet_geo.low


@pytest.mark.parametrize(
    ("ratio", "claimed", "verdict"),
    [
        (Ratio(5.0, 4.0, 6.0, 5), 5.0, "reproduced"),
        (Ratio(2.0, 1.5, 3.5, 5), 5.0, "reproduced"),  # the interval reaches the band (5 / 1.5 = 3.33)
        (Ratio(2.0, 1.5, 3.0, 5), 5.0, "not reproduced"),
        (Ratio(0.3, 0.25, 0.35, 5), 4.0, "not reproduced"),
        (Ratio(40.0, 35.0, 45.0, 5), 20.0, "not reproduced"),
    ],
)
def test_ratio_verdicts_follow_the_stated_band(ratio, claimed, verdict):
    assert claim_verdicts.ratio_verdict(ratio, claimed).split(" (")[0] == verdict


@pytest.mark.parametrize(
    ("ratio", "size"),
    [(Ratio(5.0, 5.0, 5.0, 1), "default"), (Ratio(5.0, 4.0, 6.0, 4), "default"), (Ratio(5.0, 4.0, 6.0, 5), "tiny")],
    ids=["one-block", "four-blocks", "tiny-data"],
)
def test_a_ratio_without_enough_evidence_gets_no_verdict(ratio, size):
    """Fewer than 5 blocks (no interval reaches 90 %) or tiny data: never "reproduced", whatever the value."""
    assert claim_verdicts.ratio_verdict(ratio, 5.0, size).startswith("insufficient data (")
    assert claim_verdicts.ratio_verdict(Ratio(5.0, 4.0, 6.0, 4), 5.0).startswith(
        "insufficient data (4 blocks; 5 needed"
    )
    assert claim_verdicts.ratio_verdict(Ratio(5.0, 4.0, 6.0, 5), 5.0, "default").startswith("reproduced")


def test_the_number_of_blocks_is_carried_into_every_ratio_and_the_fewest_into_the_mean():
    ratios, geo = stats.block_ratios_with_geomean([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1.0, 2.0]])
    assert [r.blocks for r in ratios] == [6, 2] and geo.blocks == 2


def test_crossover_is_interpolated_on_log_axes():
    n = np.array([1e3, 1e4, 1e5])
    at, text = study_claims.crossover(n, np.array([0.5, 0.8, 2.0]))
    fraction = math.log(1 / 0.8) / math.log(2.0 / 0.8)
    assert at == pytest.approx(10 ** (4 + fraction))
    assert "between 10,000 and 100,000" in text


def test_no_crossover_inside_the_range_says_who_leads():
    n = np.array([1e3, 1e4])
    assert study_claims.crossover(n, np.array([1.5, 3.0])) == (None, "JAX ahead at every N measured (1,000–10,000)")
    assert study_claims.crossover(n, np.array([0.5, 0.9])) == (None, "Stan ahead at every N measured (1,000–10,000)")


def test_a_forest_plot_draws_single_block_ratios():
    from stanjax.reports.figures import forest_svg

    # 11 models, one block each, as in the tiny suite; with seed 5 the geometric mean rounds out of its interval.
    values = np.random.default_rng(5).lognormal(size=(11, 2))
    ratios, geo = stats.block_ratios_with_geomean([[a / b] for a, b in values])
    assert min(geo.value - geo.low, geo.high - geo.value) > -1e-12  # the interval is the point, up to rounding
    comparison = {
        "numerator": "A",
        "denominator": "B",
        "warm": geo,
        "cold": None,
        "machine": "m",
        "size": "small",
        "models": [{"model_id": f"m{i}", "warm": r, "cold": None} for i, r in enumerate(ratios)],
    }
    assert forest_svg(comparison).startswith("<svg")


def test_forest_plot_ticks_are_labelled_on_both_sides_of_one():
    """Every ratio between 3× and 5×: the axis still shows labelled ticks below and above 1×."""
    from stanjax.reports.figures import forest_svg

    ratios, geo = stats.block_ratios_with_geomean([[3.0, 3.0], [5.0, 5.8]])
    comparison = {
        "numerator": "A",
        "denominator": "B",
        "warm": geo,
        "cold": None,
        "machine": "m",
        "size": "small",
        "models": [{"model_id": f"m{i}", "warm": r, "cold": None} for i, r in enumerate(ratios)],
    }
    ticks = re.findall(r">([\d.,]+)×( slower)?</text>", forest_svg(comparison))
    labels = [float(t.replace(",", "")) ** (-1 if slower else 1) for t, slower in ticks]
    assert min(labels) < 1 < max(labels), labels
    assert not re.search(r">0\.[\d]+×", forest_svg(comparison))  # below 1: "10× slower", never "0.1×"


@pytest.mark.parametrize(
    ("value", "text", "in_words"),
    [
        (3.957, "3.96×", "3.96× faster"),
        (0.02832, "35.3× slower", "35.3× slower"),
        (1.0, "1.00×", "1.00× faster"),
        (float("nan"), "–", "–"),
        (None, "–", "–"),
        (float("inf"), "–", "–"),
    ],
)
def test_a_ratio_below_one_is_written_as_times_slower(value, text, in_words):
    assert times(value) == text and speed(value) == in_words


def test_an_interval_of_ratios_reads_in_one_direction_or_across_one():
    assert span(3.61, 4.32) == "3.61–4.32×"
    assert span(1 / 40.2, 1 / 30.1) == "30.1–40.2× slower"
    assert span(0.994, 1.42) == "1.01× slower to 1.42×"
    assert interval(stats.Ratio(0.5, 0.25, 0.8, 5)) == "2.00× slower (1.25–4.00× slower)"
    assert times(0.5, slower="lower") == "2.00× lower"


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (2204.9, 3, "2,200"),
        (282.8, 3, "283"),
        (85.63, 3, "85.6"),
        (0.003471, 3, "0.00347"),
        (4.0, 3, "4.00"),
        (1.00549, 4, "1.005"),
        (16_812.0, 3, "16,800"),
        (1.4e9, 3, "1,400,000,000"),
        (12, 3, "12"),
        (None, 3, "–"),
        (float("nan"), 3, "–"),
        (0.0, 3, "0"),
        (-0.5, 3, "-0.500"),
        (3.2157e16, 3, "3.22 × 10¹⁶"),
    ],
)
def test_numbers_have_three_significant_digits_and_thousands_separators(value, digits, text):
    assert number(value, digits) == text
    assert "e+" not in number(value, digits)


def test_counts_are_whole_numbers_whatever_their_dtype():
    assert count(np.float64(12.0)) == "12" and count(1234) == "1,234" and count(float("nan")) == "–"


def test_an_svgs_repeated_styles_are_classes_defined_once_in_it():
    """matplotlib writes a grid line's whole style on every line: each style a figure repeats becomes a class of
    its own <style>, named by the style's hash; a style used once stays inline. Drawn alike, a third smaller."""
    import matplotlib.pyplot as plt

    from stanjax.reports.figures import svg
    from stanjax.reports.svg_text import STYLE, shared_styles

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [1, 4, 9])
    ax.grid(which="both", alpha=0.3)
    text = svg(fig, "a planted figure")
    rules = dict(re.findall(r"\.(s[0-9a-f]{7})\{([^}]*)\}", text))
    assert rules and all(f'class="{name}"' in text for name in rules)
    assert all(n == 1 for n in Counter(STYLE.findall(text)).values())  # no inline style left twice
    inline = (
        '<svg><path style="fill: none" d="M 0 0"/><path style="fill: none" d="M 1 1"/><text style="x">a</text></svg>'
    )
    shared = shared_styles(inline)
    assert shared.count("fill: none") == 1 and 'style="x"' in shared and len(shared) < len(inline) + 40


def test_two_stan_setups_that_differ_in_two_of_program_translation_and_front_end_get_no_comparison():
    from stanjax.reports.headline import one_change

    stan = {"family": "stan"}
    published, o1, expert, expert_o1 = ({**stan, "program": p} for p in ("", "O1", "expert", "expert-O1"))
    assert one_change(published, o1) and one_change(expert, expert_o1) and one_change(published, expert)
    assert one_change(o1, expert_o1)
    assert not one_change(published, expert_o1) and not one_change(o1, expert)
    assert one_change({"family": "jax", "program": ""}, expert_o1)  # NumPyro against any Stan program
    cmdstan = {**published, "front_end": "cmdstan"}
    published, expert = {**published, "front_end": "bundled"}, {**expert, "front_end": "bundled"}
    assert one_change(cmdstan, published) and not one_change(cmdstan, expert)  # front end and program: two
