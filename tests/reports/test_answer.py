"""The first screen's words from made-up regime-map rows: counts per model (a model whose machines disagree is
counted once, with each machine's verdict named), a model neither side sampled validly as its own verdict with
its failed gates, ratios without a verdict with their direction so far, and the regime summary's lines."""

import pandas as pd

from stanjax.reports.first_screen import answer_sentence, column_widths, regime_summary, short_sentence
from stanjax.reports.headline import PAIRINGS
from stanjax.reports.stats import Ratio

CPU = next(p for p in PAIRINGS if p.numerator_name == "JAX-CPU")


def entry(machine: str, value: float, blocks: int = 5, to_result: float | None = 1.5) -> dict:
    low, high = value * 0.9, value * 1.1
    state = "measured" if blocks >= 5 else "insufficient data"
    direction = "faster" if low > 1 else "slower" if high < 1 else "no clear difference"
    return {
        "machine": machine,
        "size": "default",
        "state": state,
        "direction": direction,
        "ratio": Ratio(value, low, high, blocks),
        "reason": f"{blocks} blocks; 5 needed",
        "to_result": {"ratio": to_result},
    }


def row(title: str, regime: str, *entries: dict, why: str = "") -> dict:
    return {"model_id": title, "title": title, "regime": regime, "entries": list(entries), "why": why}


INVALID_WHY = (
    "invalid: NumPyro-CPU 0 of 3 valid (failed: ess, reference, rhat); Stan-CPU 0 of 3 valid (failed: ess, "
    "reference, rhat) (epyc-2core, default size)"
)
ROWS = [
    row("Dogs", "published recursion", entry("epyc", 15.4), entry("xeon", 12.0)),
    row("Arma", "published recursion", entry("epyc", 5.1)),
    row("Covtype", "data-parallel", entry("epyc", 1.26, to_result=0.93), entry("xeon", 1.0)),
    row("Eight schools", "tiny model", entry("h200", 2.7, blocks=1)),
    row("Funnel", "a funnel", why=INVALID_WHY),
    row("Lotka", "ODE", why="no JAX-CPU and Stan-CPU runs of it in a campaign"),
]


def test_the_sentence_counts_each_model_once():
    sentence = answer_sentence(CPU, ROWS, pd.DataFrame())
    assert "JAX-CPU faster on Dogs (15.4× (13.9–16.9×), epyc; 12.0× (10.8–13.2×), xeon), Arma" in sentence
    # covtype: faster on one machine, no clear difference on the other: once, under "the machines differ"
    assert "the machines differ on 1 model (Covtype: faster on epyc, no clear difference on xeon)" in sentence
    assert "Covtype (" not in sentence.split("the machines differ")[0]
    assert "insufficient data on Eight schools (2.70× faster so far, 1 block; 5 needed)" in sentence
    assert "neither side valid on 1 model (Funnel: failed ess, reference, rhat)" in sentence
    assert sentence.endswith("; 1 model(s) not measured.")  # Lotka alone: the funnel is a finding, not a gap


def test_the_regime_summary_says_in_a_line_what_each_regime_shows():
    summary = {r["regime"]: r for r in regime_summary([{"pairing": CPU, "rows": ROWS}])}
    assert list(summary) == ["published recursion", "data-parallel", "tiny model", "a funnel", "ODE"]
    assert summary["published recursion"]["models"] == 2
    cells = {regime: r["cells"][0] for regime, r in summary.items()}
    assert cells["published recursion"] == {  # Dogs counted once, at its first (best-evidenced) entry
        "verdict": "faster",
        "text": "faster on 2 (5.10–15.4×); to 1,000 ESS 1.50× [epyc]",
    }
    assert cells["data-parallel"] == {"verdict": "mixed", "text": "machines differ on Covtype"}
    assert cells["tiny model"] == {
        "verdict": "insufficient data",
        "text": "Eight schools: 2.70× faster so far (1 block; 5 needed, h200)",
    }
    assert cells["a funnel"] == {
        "verdict": "invalid",
        "text": "neither side valid: Funnel (failed ess, reference, rhat)",
    }
    assert cells["ODE"] == {"verdict": "not-measured", "text": "not measured: 1"}


def nes(year: int, value: float) -> dict:
    """A planted near-duplicate: one of NES's years, a member of the family "NES"."""
    return {**row(f"NES {year}", "small regression", entry("epyc", value)), "counted_as": "NES"}


def test_a_family_of_near_duplicates_counts_once_with_its_members_range():
    years = [nes(1972, 2.0), nes(1976, 3.0), nes(1980, 4.0), nes(1984, 5.0)]
    rows = [*years, row("Dogs", "small regression", entry("epyc", 15.4))]
    sentence = answer_sentence(CPU, rows, pd.DataFrame())
    assert "JAX-CPU faster on NES (4 posteriors, 2.00–5.00×), Dogs (15.4× (13.9–16.9×), epyc)." in sentence
    assert sentence.endswith(" Near-duplicates count once, as a family: NES (4 posteriors).")
    [summary] = regime_summary([{"pairing": CPU, "rows": rows}])
    assert summary["models"] == 2
    assert summary["cells"][0]["text"] == "faster on 2 (2.00–15.4×); to 1,000 ESS 1.50× [epyc]"
    # one year pointing another way: the family once, apart, with how many of its members point each way
    mixed = [*years[:3], nes(1984, 1.0)]
    sentence = answer_sentence(CPU, mixed, pd.DataFrame())
    assert "the near-duplicates of 1 family differ (NES: faster on 3, no clear difference on 1)" in sentence
    assert "JAX-CPU faster on" not in sentence
    [summary] = regime_summary([{"pairing": CPU, "rows": mixed}])
    assert summary["cells"][0] == {"verdict": "mixed", "text": "near-duplicates differ in NES"}


def test_the_regime_summary_follows_the_order_it_is_given_then_the_maps():
    """The crossover figure's order of regimes (along the work of a gradient) first; the rest as the map has them."""
    summary = regime_summary([{"pairing": CPU, "rows": ROWS}], ["ODE", "data-parallel"])
    assert [r["regime"] for r in summary] == ["ODE", "data-parallel", "published recursion", "tiny model", "a funnel"]


def test_the_regime_summary_gives_its_width_to_the_column_with_more_to_say():
    """A column of "not measured" gets less than one of long verdicts; the widths fill the table; a lone regime
    name keeps at least ``step`` percent."""
    verdicts = "faster on 3 (1.25–5.11×); to 1,000 ESS 1.07× slower to 2.2× [epyc-2core, xeon-2core]"
    rows = [
        {"regime": f"regime {i}", "models": 2, "cells": [{"text": "not measured: 2"}, {"text": verdicts}]}
        for i in range(6)
    ]
    regime, gpu, cpu = column_widths(rows)
    assert regime + gpu + cpu == 100 and cpu > 2 * gpu and min(regime, gpu) >= 10
    swapped = [{**r, "cells": r["cells"][::-1]} for r in rows]
    assert column_widths(swapped) == [regime, cpu, gpu]


def test_a_ratio_over_the_bundled_stan_says_where_cmdstan_sampled_faster():
    """Where CmdStan sampled a program more than 10 % faster than the bundled Stan on a machine (of any
    fingerprint under its name), the ratios over the bundled Stan on that model say so, with an estimate labelled
    as one; 10 % or less, or another model, says nothing."""
    from stanjax.reports.answer import front_end_gaps, gap_note

    def side(front_end: str, program: str = "") -> dict:
        return {"engine": "stan", "front_end": front_end, "program": program}

    comparison = {
        "machine": "epyc-2core-cb44675b",
        "size": "default",
        "numerator": "CmdStan-CPU",
        "denominator": "Stan-CPU",
        "numerator_setup": side("cmdstan"),
        "denominator_setup": side("bundled"),
        "models": [
            {"model_id": "Dogs", "warm": Ratio(1.6, 1.4, 1.8, 5)},
            {"model_id": "Arma", "warm": Ratio(1.05, 0.9, 1.2, 5)},
            {"model_id": "Hmm", "warm": Ratio(1.24, 0.9, 1.3, 5)},  # its interval holds 1
        ],
    }
    two_changes = {**comparison, "numerator_setup": side("cmdstan", "expert"), "numerator": "CmdStan-CPU-expert"}
    assert front_end_gaps([two_changes]) == {}  # another program too: not the front end's gap
    gaps = front_end_gaps([comparison])
    assert list(gaps) == [("epyc-2core", "default", "Dogs", "Stan-CPU")]
    cell = {"machine": "epyc-2core", "size": "default", "model_id": "Dogs", "denominator": "Stan-CPU"}
    cell["ratio"] = Ratio(16.0, 12, 19, 5)
    assert gap_note(gaps, cell) == (
        "Stan-CPU is the bundled Stan: CmdStan-CPU sampled this program 1.60× faster (1.40–1.80×) in ESS/s on "
        "epyc-2core-cb44675b; over CmdStan this ratio would be about 10.0× (estimated: the two medians divided, "
        "not measured in one block)"
    )
    assert gap_note(gaps, {**cell, "model_id": "Arma"}) == ""
    assert gap_note(gaps, {**cell, "size": "small"}) == ""  # measured at the default size only
    assert gap_note(gaps, {**cell, "denominator": "Stan-CPU-expert"}) == ""  # another program: its own pairing
    # the bundled Stan as httpstan built it (records before 2026-11-28): its own label, said which it is
    httpstan = {**comparison, "denominator": "httpstan-CPU", "denominator_setup": side("httpstan")}
    note = gap_note(front_end_gaps([httpstan]), {**cell, "denominator": "httpstan-CPU"})
    assert note.startswith("httpstan-CPU is the bundled Stan as httpstan built it: CmdStan-CPU sampled")


def test_a_model_with_an_expert_program_is_answered_over_it_alone():
    """Issue 63: no first-screen ratio rests on a program a Stan expert would rewrite. Dogs has stan/expert/dogs.stan:
    its ratio over the published program (one machine) is set apart, its ratio over the expert's kept; a model
    without an expert program keeps every ratio."""
    from stanjax.reports.answer import as_published, over_expert_programs

    campaign = pd.DataFrame(
        {"run_id": ["np1", "pub1", "np2", "exp2"], "program": ["", "", "", "expert"]}  # NumPyro has no program
    )
    published = {**entry("epyc", 15.4), "entry": {"run_ids": [["np1"], ["pub1"]]}}
    expert = {**entry("xeon", 1.08), "entry": {"run_ids": [["np2"], ["exp2"]]}}
    kept, apart = over_expert_programs([published, expert], "dogs-dogs", campaign)
    assert kept == [expert] and apart == [published]
    assert over_expert_programs([published], "dogs-dogs", campaign) == ([], [published])
    assert "as published only (15.4× faster on epyc)" in as_published([published])
    no_expert = "gp_pois_regr-gp_pois_regr"  # posteriordb's program is how an expert writes it: no stan/expert/
    assert over_expert_programs([published, expert], no_expert, campaign) == ([published, expert], [])


def test_a_ratio_over_httpstans_build_is_set_apart_from_the_first_screen():
    """Issue 81: the bundled Stan as httpstan built it (records before 2026-11-28) costs up to 2× a gradient; a ratio
    over it is never a first-screen answer. A model with one over today's build keeps that one; a model with only
    httpstan's says so, with its ratios, and they stay in the regime map."""
    from stanjax.reports.answer import over_httpstan_only, over_todays_stan

    campaign = pd.DataFrame(
        {"label": ["NumPyro-CPU", "httpstan-CPU", "Stan-CPU"], "front_end": ["numpyro", "httpstan", "bundled"]}
    )
    old = {**entry("xeon-2core", 2.04), "denominator": "httpstan-CPU"}
    new = {**entry("epyc-2core", 1.6), "denominator": "Stan-CPU"}
    assert over_todays_stan([old, new], campaign) == ([new], [old])
    assert over_todays_stan([old], campaign) == ([], [old])
    assert over_todays_stan([old, new], campaign.assign(front_end="bundled")) == ([old, new], [])
    assert over_httpstan_only([old]).startswith("over httpstan-CPU only (2.04× faster on xeon-2core): the bundled")


def test_the_first_screen_sentence_counts_families_and_says_where_stan_is_sooner():
    """The sentence a reader takes in at a glance: the machines, the families each way with their ranges (a few
    named), the rest counted, and how many with a verdict reach 1,000 effective draws sooner on Stan once
    compilation counts; none where no model has a verdict (the full sentence says what the records hold)."""
    rows = [*ROWS, row("GP", "GP", entry("epyc", 0.5, to_result=0.4))]
    assert short_sentence(CPU, rows) == (
        "On epyc and xeon, compile excluded, JAX-CPU samples 2 of 7 model families faster than Stan-CPU in ESS/s "
        "(5.10–15.4×), slower on 1 (2.00× slower: GP); the machines or near-duplicates differ on 1; 1 has too few "
        "blocks; neither side is valid on 1; 1 not measured. Counting compilation in a fresh process, Stan-CPU "
        "reaches 1,000 effective draws sooner on 1 of the 3 with a verdict."
    )
    years = [nes(1972, 2.0), nes(1976, 3.0), nes(1980, 4.0), nes(1984, 5.0)]
    family = short_sentence(CPU, [*years, row("Dogs", "small regression", entry("epyc", 15.4))])
    assert family.startswith("On epyc, compile excluded, JAX-CPU samples 2 of 2 model families faster than Stan-CPU")
    assert "(2.00–15.4×)." in family
    assert short_sentence(CPU, [row("Lotka", "ODE", why="no JAX-CPU and Stan-CPU runs of it in a campaign")]) is None


def test_a_model_neither_side_samples_is_told_over_todays_stan_before_httpstans_build():
    """Issue 81: where every cell of a model is invalid, its reason on the first screen names today's Stan build's
    runs, not httpstan's older ones (earlier columns in the map's order)."""
    from stanjax.reports.answer import why_none

    columns = [{"machine": "epyc-2core", "size": "default"}, {"machine": "epyc-2core-54625c4b", "size": "default"}]
    old = {"state": "invalid", "denominator": "httpstan-CPU", "text": "NumPyro-CPU 0 of 3 valid; httpstan-CPU 0 of 3"}
    new = {"state": "invalid", "denominator": "Stan-CPU", "text": "NumPyro-CPU 0 of 5 valid; Stan-CPU 0 of 5 valid"}
    said = why_none({"cells": [old, new]}, columns, CPU, frozenset({"httpstan-CPU"}))
    assert said == f"invalid: {new['text']} (epyc-2core-54625c4b, default size)"
    assert "httpstan-CPU" in why_none({"cells": [old, new]}, columns, CPU)  # the map's order without the labels
